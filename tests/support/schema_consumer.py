"""A consumer of Fleet's integration events written from the published JSON Schemas alone.

It imports nothing of Fleet's: nats-py reads ``orchestration.>``, ``jsonschema`` checks each body
against ``proto/schemas/<subject>.schema.json``, as a team elsewhere would. A message on a subject
with no schema, or one its schema refuses, is an error naming the subject and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "proto" / "schemas"


def validators() -> dict[str, Draft202012Validator]:
    """Each subject's validator (the schema's title is its subject), formats checked."""
    out = {}
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        Draft202012Validator.check_schema(schema)
        out[schema["title"]] = Draft202012Validator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
    return out


def check(subject: str, body: dict[str, Any], known: dict[str, Draft202012Validator]) -> None:
    """Raise AssertionError unless ``body`` is valid for ``subject``'s schema."""
    validator = known.get(subject)
    assert validator is not None, f"{subject}: no schema published for this subject"
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
    assert not errors, f"{subject}: " + "; ".join(
        f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors
    )
