"""A ``fleet`` command starts without the libraries only a running node needs.

Every command reads the settings, and the settings read the councils' check names and personas;
those used to pull in sqlglot, jsonschema, aiohttp and nats-py, and ``fleet --help`` took 1.8 s
of a two-core machine instead of 1.1 s. Each command run from a script or a test pays it.
"""

from __future__ import annotations

import json
import subprocess
import sys

NODE_ONLY = ("sqlglot", "jsonschema", "aiohttp", "nats", "ray", "valkey", "neo4j", "real_ladybug")
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
