"""SIGKILL the dispatcher mid-deliberation (during round 0, then during a later round), restart
it: what is outstanding is derived from the events and re-dispatched, no (agent, round) answer is
recorded twice, and every deliberation reaches a terminal state.

The dispatcher is a real child process (``fleet up --components dispatcher``) on a real
nats-server; the endpoint is the load generator with a delay (it stands in for a slow model and
claims nothing about quality). The test process only requests deliberations and reads events.
"""

from __future__ import annotations

import asyncio
import collections
import uuid
from pathlib import Path

import pytest

from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import BACKENDS, FleetProcess, dispatcher_env
from tests.support.deliberations import FIB_TASK, requested
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)

N = 3


def count(events: list[object], kind: type) -> int:
    return sum(isinstance(e, kind) for e in events)


def logs_of(procs: list[FleetProcess]) -> str:
    """What each dispatcher process logged last: its last traceback whole, else its log's tail."""
    return "\n\n".join(
        f"--- dispatcher {i} ({p.log_path}):\n{p.last_traceback() or p.tail()}"
        for i, p in enumerate(procs, start=1)
    )


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_sigkilled_dispatchers_resume_without_doubling_any_answer(
    tmp_path: Path,
    nats_url: str,
    nats_env: dict[str, str],
    backend: str,
    backend_env: dict[str, str],
) -> None:
    stream = nats_env["NATS_STREAM"]
    app = await asyncio.to_thread(FleetApplication, nats_env)
    store = ApplicationDeliberationStore(app)
    async with LoadGenServer("instant", delay_s=1.0) as lg:
        env = dispatcher_env(nats_url, stream, lg.url, backend_env)
        procs = [FleetProcess(tmp_path / "d1", "dispatcher", env)]
        await asyncio.to_thread(procs[0].wait_ready)
        tasks = [f"recover-{uuid.uuid4().hex[:6]}-{i}" for i in range(N)]
        ids = [deliberation_id(t) for t in tasks]
        for t in tasks:
            await store.create(requested(t, task=FIB_TASK, rounds=2, timeout_seconds=120))

        async def events(d_id: uuid.UUID) -> list[object]:
            return list(await store.history(d_id))

        # 1. kill during round 0: calls are in flight, nothing or part of round 0 recorded
        await eventually(lambda: lg.counters.calls >= 3, timeout=30.0)
        procs[0].kill()
        round0 = [count(await events(i), Deliberation.ProposalReceived) for i in ids]
        assert sum(round0) < 3 * N, "round 0 finished before the kill: make the delay longer"

        # 2. restart; kill again once a later round is under way
        procs.append(FleetProcess(tmp_path / "d2", "dispatcher", env))
        await asyncio.to_thread(procs[-1].wait_ready)

        async def in_round_1() -> bool:
            evs = [await events(i) for i in ids]
            return any(count(e, Deliberation.CritiqueReceived) for e in evs)

        try:
            # Generous: a fresh clone's first child process compiles every module first.
            await eventually(in_round_1, timeout=120)
        except AssertionError:
            msg = f"round 1 never started; dispatcher logs:\n{logs_of(procs)}"
            raise AssertionError(msg) from None
        procs[-1].kill()
        finished = [count(await events(i), Deliberation.Completed) for i in ids]
        assert sum(finished) < N, "all done before the second kill"

        # 3. a third start finishes everything
        procs.append(FleetProcess(tmp_path / "d3", "dispatcher", env))
        await asyncio.to_thread(procs[-1].wait_ready)

        async def all_terminal() -> bool:
            return all([(await store.get(i)).is_terminal for i in ids])

        try:
            await eventually(
                all_terminal, timeout=90, what=lambda: f"not all terminal:\n{logs_of(procs)}"
            )
        finally:
            for p in procs:
                p.stop()
    for d_id in ids:
        d = await store.get(d_id)
        if d.status.value != "COMPLETED":
            # pytest.fail keeps the message whole (an assertion's repr is cut in the middle).
            pytest.fail(f"{d_id} ended {d.status.value}: {d.reason}\n\n{logs_of(procs)}")
        evs = await events(d_id)
        answers = collections.Counter(
            (e.agent_id, e.round)  # type: ignore[attr-defined]
            for e in evs
            if isinstance(e, Deliberation.ProposalReceived | Deliberation.AgentFailed)
        )
        assert set(answers.values()) == {1} and len(answers) == 6  # 3 agents x 2 rounds, once
        critiques = collections.Counter(
            (e.agent_id, e.round)
            for e in evs
            if isinstance(e, Deliberation.CritiqueReceived)  # type: ignore[attr-defined]
        )
        assert set(critiques.values()) == {1} and len(critiques) == 3
        assert count(evs, Deliberation.PeerRatingsReceived) == 3
        assert count(evs, Deliberation.Completed) == 1
    app.close()
