"""SIGKILL the dispatcher while the architect is choosing an orchestration's winner, restart it:
the next dispatcher asks the architect again and records its choice once, and the deliberation
completes with that winner (no double selection, no agent asked to propose again).

The dispatcher is a real child process (``fleet up --components dispatcher``) on a real
nats-server, its agent calls in its process or on NATS workers (the architect's call rides the
same queue as every review); the endpoint is the load generator, whose architect first hangs,
then answers.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from agent_runtime.member.architect import ARCHITECT_ASK
from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import FleetProcess, dispatcher_env
from tests.support.deliberations import FIB_TASK, requested
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(180)


def kinds(events: list[object]) -> list[str]:
    return [type(e).__name__ for e in events]


@pytest.mark.parametrize("backend", ["in-process", "nats"])
async def test_a_dispatcher_killed_mid_selection_is_finished_by_the_next_once(
    tmp_path: Path,
    nats_url: str,
    nats_env: dict[str, str],
    backend: str,
    backend_env: dict[str, str],
) -> None:
    app = await asyncio.to_thread(FleetApplication, nats_env)
    store = ApplicationDeliberationStore(app)
    script = {ARCHITECT_ASK: '{"winner": "A", "rationale": "asked again, answered once"}'}
    async with LoadGenServer("scripted", script=script) as lg:
        lg.modes_by_user["agent-architect-001"] = "hang"
        env = dispatcher_env(nats_url, nats_env["NATS_STREAM"], lg.url, backend_env)
        first = FleetProcess(tmp_path / "d1", "dispatcher", env)
        procs = [first]
        try:
            await asyncio.to_thread(first.wait_ready)
            task = f"arch-kill-{uuid.uuid4().hex[:6]}"
            d = requested(task, task=FIB_TASK, timeout_seconds=120)
            d.orchestrate(architect_k=3)
            await store.create(d)
            d_id = deliberation_id(task)

            def architect_asked() -> bool:
                return any(r.get("user") == "agent-architect-001" for r in lg.requests)

            await eventually(architect_asked, timeout=60, what="the architect is asked")
            first.kill()
            before = kinds(list(await store.history(d_id)))
            assert before.count("ProposalScored") == 3
            assert "ArchitectSelected" not in before and "Completed" not in before

            lg.modes_by_user.pop("agent-architect-001")  # the architect answers from now on
            proposals = sum(r.get("user", "").startswith("dev-agent") for r in lg.requests)
            procs.append(FleetProcess(tmp_path / "d2", "dispatcher", env))
            await asyncio.to_thread(procs[-1].wait_ready)

            async def terminal() -> bool:
                return (await store.get(d_id)).is_terminal

            await eventually(terminal, timeout=60, what="the orchestration completes")
        finally:
            for p in procs:
                p.stop()
        after = list(await store.history(d_id))
        done = await store.get(d_id)
        assert kinds(after).count("ArchitectSelected") == 1, kinds(after)
        assert kinds(after).count("Completed") == 1 and "ArchitectFellBack" not in kinds(after)
        assert done.architect_rationale == "asked again, answered once"
        assert done.winner == done.architect_winner
        (selected,) = [e for e in after if isinstance(e, Deliberation.ArchitectSelected)]
        assert selected.winner == done.winner
        # the second dispatcher made no proposal calls: only the architect's was outstanding
        assert sum(r.get("user", "").startswith("dev-agent") for r in lg.requests) == proposals
    app.close()
