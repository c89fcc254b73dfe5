"""Shared fixtures: private servers on free loopback ports, one per test session.

Each fixture module owns one kind of server; they live in tests/fixtures/ and are loaded here.
"""

from __future__ import annotations

import os

from fleet.embedded.ray_local import LOCAL_ONLY_ENV

# Before anything imports ray: every Ray socket of the test session stays on 127.0.0.1.
for _k, _v in LOCAL_ONLY_ENV.items():
    os.environ.setdefault(_k, _v)
# Nodes started from the environment (``fleet up``, ``Settings.from_env``) serve their API in the
# node's process unless a test asks for the default's child (``FLEET_API_PROCESS=child``): most
# tests are about what the API answers, not where; one more process per node would cost each a
# second. The child's own contract is tested where it is asked for (tests/e2e/test_api_process).
os.environ.setdefault("FLEET_API_PROCESS", "inline")

pytest_plugins = [
    "tests.fixtures.nats",
    "tests.fixtures.valkey",
    "tests.fixtures.neo4j",
    "tests.fixtures.graphs",
    "tests.fixtures.llm",
    "tests.fixtures.ray",
]
