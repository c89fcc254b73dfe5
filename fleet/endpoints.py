"""Where each part of a node listens: written to ``<data_dir>/run.json`` for the CLI, and shown by
GetNodeStatus. Its own module because both ``fleet.bootstrap`` (which fills it) and the API (which
shows it) need it, and the API must not import the bootstrap that builds it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"


@dataclass
class Endpoints:
    """Where each part listens; filled in as the node starts them."""

    grpc: str = ""
    nats_url: str = ""
    stream: str = ""
    valkey_url: str = ""
    graph: str = ""
    llm_url: str = ""
    model: str = ""
    ray: str = ""
    metrics: str = ""
    web: str = ""
    """The web console's URL."""
    components: str = ""
    pid: int = field(default_factory=os.getpid)


def endpoints_from_json(text: str) -> Endpoints:
    """``Endpoints`` as ``json.dumps(vars(endpoints))`` wrote them (unknown keys ignored).

    Raises:
        ValueError: not a JSON object, or a known key whose value is not of its type.
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    fields = {"pid": int}
    known = {k: v for k, v in data.items() if k in Endpoints.__dataclass_fields__}
    for key, value in known.items():
        kind = fields.get(key, str)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{key}={value!r} is not a {kind.__name__}")
    return Endpoints(**known)


def read_run_file(data_dir: Path) -> dict[str, Any] | None:
    """The endpoints a running ``fleet up`` wrote, or None."""
    try:
        data: dict[str, Any] = json.loads((data_dir / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data
