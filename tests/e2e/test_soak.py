"""The fault-injection soak (``bench/soak``), short enough for CI: Fleet split across processes
on the NATS agent backend, deliberations submitted through gRPC at one a second while a process
of every kind (nats-server, Valkey, API, projectors, dispatchers, workers) is SIGKILLed and
restarted every 3–6 s; then every invariant is judged from the stream (no acknowledged
submission lost, no duplicate answer, no AgentFailed where an answer was stored, nothing after a
terminal event, every deliberation ended, ``fleet verify`` clean, graph count = submissions,
every process back). Once on one nats-server, once on a three-node JetStream cluster (R3) that
loses a node at a time.

Fleet's own recovery windows (3 s ack wait and lease); agent calls bounded at 30 s and deadlines
at 60 s, so that a run that goes wrong still ends in a few minutes (one that goes right takes
about one). With calls bounded at 20 s, a worker on the cluster came back after 16.7 s once,
and one call was recorded failed while its answer was stored: the bound leaves room for that.
The load generator is the model: canned answers, nothing claimed about quality.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from bench.soak import KINDS, SoakConfig, SoakResult, run_soak
from bench.soak._report import print_result

pytestmark = pytest.mark.timeout(360)

SHORT = {
    "rate_per_s": 1.0,
    "kill_every_s": (3.0, 6.0),
    "deliberation_timeout_s": 60,
    "agent_call_timeout_s": 30.0,
    "keep": True,
}


def report(result: SoakResult) -> str:
    out = Console(file=io.StringIO(), width=140)
    print_result(result, out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    return str(text)


@pytest.mark.parametrize(
    ("cluster", "deliberations"), [(False, 50), (True, 40)], ids=["one-node", "cluster-r3"]
)
async def test_soak_keeps_every_invariant_while_processes_are_killed(
    tmp_path: Path, cluster: bool, deliberations: int
) -> None:
    config = SoakConfig(
        deliberations=deliberations, cluster=cluster, data_dir=tmp_path / "soak", **SHORT
    )
    result = await run_soak(config)
    table = report(result)
    killed = {f.kind for f in result.faults if f.cause == "SIGKILL"}
    assert killed == KINDS, f"not every kind of process was killed:\n{table}"
    violated = [v.name for v in result.verdicts if not v.ok]
    assert not violated, f"violated: {violated}\n{table}"
