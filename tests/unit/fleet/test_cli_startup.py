"""A ``fleet`` command starts without the libraries only a running node needs.

Every command reads the settings, and the settings read the councils' check names and personas;
those used to pull in sqlglot, jsonschema, aiohttp and nats-py, and ``fleet --help`` took 1.8 s
of a two-core machine instead of 1.1 s. Each command run from a script or a test pays it.
Later the settings, the role names and the renderer pulled in the aggregates, the service layer
and ``eventsourcing``: ``fleet --version`` took 0.64-0.92 s, and 0.36-0.54 s without them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from aggregates import Role
from aggregates.story import Phase
from fleet.cli._common import PHASES, ROLES

NODE_ONLY = (
    *("sqlglot", "jsonschema", "aiohttp", "nats", "ray", "valkey", "neo4j", "real_ladybug"),
    *("eventsourcing", "aggregates", "application", "dispatchers", "agent_runtime", "yaml"),
)
"""Top-level packages a command's start must not import (the node, the checks and the commands
that talk to NATS import them when they run)."""

PROBE = """
import json, sys
from fleet.cli import build_parser
build_parser()  # every command's module, as `fleet --help` loads them
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_the_cli_and_every_commands_parser_load_without_the_node_libraries() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert "fleet" in loaded
    assert not loaded & set(NODE_ONLY), sorted(loaded & set(NODE_ONLY))


def test_the_role_and_phase_names_the_cli_offers_are_the_aggregates() -> None:
    assert ROLES == tuple(r.value for r in Role)
    assert PHASES == tuple(p.value for p in Phase)
