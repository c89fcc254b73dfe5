"""`fleet up` as people run it: a subprocess, stopped with SIGTERM mid-deliberation, restarted.

The LLM endpoint is the load generator (``fleet_testing.loadgen``): it answers at once, except a
task carrying the marker ``loadgen:hang``, which it never answers. So one deliberation completes
before the stop and one is still waiting on its agents when SIGTERM arrives. After the restart
the completed one is intact (same status, winner and proposals) and the stuck one ends TIMEOUT on
its recorded deadline (or at once, if that passed while Fleet was down), never FAILED.

Both starts join the test session's Ray instance (``RAY_ADDRESS``), as the other multi-process
tests do, rather than each starting one of its own (8-15 s a start on two cores): what is under
test is the stop and the resume. ``fleet demo``'s test runs a node whose Ray is its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleet.client import FleetClient
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(300)
DEADLINE_S = 25
SLACK_S = 5.0


def _start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "fleet.cli", "-v", "up"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C in the test's terminal is not Fleet's
    )


def _tail(log: Path) -> str:
    return log.read_text()[-3000:]


def _grpc_address(data_dir: Path, pid: int) -> str:
    """The API address the `fleet up` with this pid wrote to run.json, or ""."""
    try:
        run = json.loads((data_dir / "run.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(run.get("grpc") or "") if run.get("pid") == pid else ""


async def _ready(proc: subprocess.Popen[bytes], data_dir: Path, log: Path) -> str:
    def address() -> str:
        assert proc.poll() is None, f"fleet up exited {proc.returncode}:\n{_tail(log)}"
        return _grpc_address(data_dir, proc.pid)

    what = lambda: f"fleet up not ready:\n{_tail(log)}"  # noqa: E731
    return await eventually(address, timeout=180, interval=0.25, what=what)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


async def _status(client: FleetClient, task: str, want: int, timeout: float) -> None:
    async def reached() -> bool:
        return bool((await client.result(task)).status == want)

    what = f"{task} never reached {pb.DeliberationStatus.Name(want)}"  # type: ignore[arg-type]
    await eventually(reached, timeout=timeout, interval=0.2, what=what)


async def test_fleet_up_stops_on_sigterm_and_resumes_every_deliberation(
    tmp_path: Path, ray_address: str
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "fleet-up.log"
    async with LoadGenServer("instant") as endpoint:
        env = {
            **os.environ,
            "RAY_ADDRESS": ray_address,
            "FLEET_DATA_DIR": str(data_dir),
            "FLEET_GRPC_PORT": str(free_port()),
            "VLLM_URL": endpoint.url,
            "VLLM_MODEL": "loadgen",
            "FLEET_AGENT_CALL_TIMEOUT": "120",  # the deadline, not the call timeout, must end it
        }
        env.pop("FLEET_METRICS_PORT", None)
        proc = _start(env, log)
        try:
            address = await _ready(proc, data_dir, log)
            async with FleetClient(address) as client:
                await client.deliberate("write fib", task_id="done-1")
                done_before = await client.wait("done-1", timeout=60)
                assert done_before.status == pb.DELIBERATION_STATUS_COMPLETED
                await client.deliberate(
                    "loadgen:hang write fib", task_id="stuck-1", timeout_seconds=DEADLINE_S
                )
                await _status(client, "stuck-1", pb.DELIBERATION_STATUS_IN_PROGRESS, 30)
                requested = await client.history("stuck-1")
            assert _stop(proc) == 0, _tail(log)
            assert not (data_dir / "run.json").exists(), "a clean stop removes run.json"

            proc = _start(env, log)
            address = await _ready(proc, data_dir, log)
            ready_at = time.time()
            async with FleetClient(address) as client:
                done_after = await client.result("done-1")
                final = await client.wait("stuck-1", timeout=DEADLINE_S + 60)
                history = await client.history("stuck-1")
        finally:
            if proc.poll() is None:
                _stop(proc)

    assert done_after.status == pb.DELIBERATION_STATUS_COMPLETED
    assert done_after.winner_id == done_before.winner_id
    assert [r.proposal.content for r in done_after.results] == [
        r.proposal.content for r in done_before.results
    ]
    assert final.status == pb.DELIBERATION_STATUS_TIMEOUT, final.error_message
    deadline = datetime.fromisoformat(json.loads(requested.events[0].data_json)["deadline"])
    timed_out = next(e for e in history.events if e.type == "TimedOut")
    at = timed_out.timestamp_ms / 1000
    # The history gives whole milliseconds: a timeout in the deadline's own millisecond reads
    # as up to 1 ms before it (36.369 against 36.369039), so compare in milliseconds.
    deadline_ms = (deadline - datetime.fromtimestamp(0, UTC)) // timedelta(milliseconds=1)
    due = max(deadline.timestamp(), ready_at)
    assert deadline_ms <= timed_out.timestamp_ms <= (due + SLACK_S) * 1000, (
        f"timed out at {at:.3f}, deadline {deadline.timestamp():.6f}, ready {ready_at:.1f}"
    )
    assert [e.type for e in history.events].count("Requested") == 1
