"""``fleet events tail`` and ``fleet replay`` with a ``NATS_URL`` nobody listens on fail within
seconds, in one line naming the URL (its password masked) and exit 1: not after the event
store's ~50 s of retries with a warning every 250 ms. The command runs as a user runs it,
against a closed loopback port.
"""

from __future__ import annotations

import time

import pytest

from fleet.embedded._process import free_port
from tests.integration.fleet._cli import fleet

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("command", [("events", "tail"), ("replay", "some-task")])
async def test_a_store_command_on_a_closed_port_fails_fast_in_one_line(
    command: tuple[str, ...],
) -> None:
    port = free_port()  # nothing listens on it
    started = time.monotonic()
    out = await fleet(
        *command, env={"NATS_URL": f"nats://fleet:s3cret@127.0.0.1:{port}"}, timeout=30
    )
    took = time.monotonic() - started

    assert out.returncode == 1, out.stderr
    assert took < 10, f"took {took:.1f} s"
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"error: cannot reach NATS at nats://fleet:***@127.0.0.1:{port} ")
    assert "ConnectionRefusedError" in out.stderr and "s3cret" not in out.stderr
    assert out.stdout == ""
