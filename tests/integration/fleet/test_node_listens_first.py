"""A node started in-process by a program (not the ``fleet`` command) also opens its API port
before anything else, because importing ``fleet`` turns gRPC's fork handlers off: on a port
already taken it fails before its private nats-server exists. A program that imported gRPC
before Fleet keeps gRPC's default (the handlers on, which abort a forked child now and then), so
that node starts its servers first and opens the port last.

Each program is a child process with no ``GRPC_ENABLE_FORK_SUPPORT`` in its environment, as a
user's program starts.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

PROGRAM = """
import asyncio, sys
{first_import}
from pathlib import Path
from fleet.bootstrap import FleetNode
from fleet.config import Settings

settings = Settings(
    data_dir=Path(sys.argv[1]), grpc_port=int(sys.argv[2]), cache_enabled=False,
    components=frozenset({{"api"}}),
)
try:
    asyncio.run(FleetNode(settings).start())
except Exception as e:
    print(e)
"""


@pytest.mark.parametrize(
    ("first_import", "listens_first"),
    [("", True), ("import grpc", False)],
    ids=["fleet-first", "grpc-imported-before-fleet"],
)
async def test_an_embedded_node_on_a_taken_port_fails_before_starting_its_servers(
    tmp_path: Path, first_import: str, listens_first: bool
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        program = PROGRAM.format(first_import=first_import)
        argv = [sys.executable, "-c", program, str(tmp_path), str(port)]
        out = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, timeout=50, env=env
        )
    assert f"cannot listen on 127.0.0.1:{port}" in out.stdout, out.stderr[-2000:]
    assert (tmp_path / "nats").exists() is not listens_first
