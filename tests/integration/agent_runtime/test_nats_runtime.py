"""The NATS agent backend on a real nats-server and the load generator (canned text, not a model):
calls round-trip, dedupe by key, fail with their reason, dead-letter, expire, and a stalled
worker's call is parked by the max-deliveries advisory."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from agent_runtime.api import (
    AgentTurn,
    AgentTurnError,
    AssessmentInput,
    Candidate,
    ReviewInput,
    Sampling,
)
from agent_runtime.member.caller import LocalAgentRuntime
from agent_runtime.nats_backend._wire import QueueNames, WorkMessage
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from agent_runtime.nats_backend.worker import AgentWorker
from fleet_testing.loadgen import LoadGenServer
from natsio import DEAD_LETTER_STREAM
from tests.integration.agent_runtime.conftest import WorkerFactory, endpoint
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


def turn(agent: str = "dev-agent-1", *, d_id: str = "d-1", timeout_s: float = 10.0) -> AgentTurn:
    return AgentTurn(
        deliberation_id=d_id,
        agent_id=agent,
        role="DEV",
        round=0,
        task="Write a function that doubles a number",
        requirements=("typed",),
        sampling=Sampling(model="loadgen", temperature=0.3, seed=7, persona="careful"),
        timeout_s=timeout_s,
    )


async def queue_drained(nc: NATS, names: QueueNames) -> None:
    async def empty() -> bool:
        return (await nc.jetstream().stream_info(names.work_stream)).state.messages == 0

    await eventually(empty, timeout=5.0, what="work left in the queue")


async def dead_letters(nc: NATS, names: QueueNames) -> list[Any]:
    js = nc.jetstream()
    out = []
    with contextlib.suppress(Exception):
        seq = 0
        while True:
            raw = await js.get_msg(
                DEAD_LETTER_STREAM, seq + 1, subject=names.dead_letter_subject("DEV"), next=True
            )
            out.append(raw)
            seq = raw.seq or 0
    return out


async def test_turn_review_and_assessment_answer_as_the_local_runtime_does(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant") as lg:
        await start_worker(lg.url)
        local = LocalAgentRuntime(endpoint(lg.url), ("DEV",))
        try:
            t = turn()
            got, want = await asyncio.gather(runtime.run_turn(t), local.run_turn(t))
            assert replace(got, latency_ms=0) == replace(want, latency_ms=0)
            assert "```python" in got.content and got.agent_id == "dev-agent-1"

            candidates = (Candidate("dev-agent-2", want.content),)
            review = ReviewInput("d-1", "dev-agent-1", "DEV", 0, "rate", t.task, "", (), candidates)
            r_got, r_want = await asyncio.gather(runtime.review(review), local.review(review))
            assert (
                replace(r_got, latency_ms=0) == replace(r_want, latency_ms=0)
                and len(r_got.reviews) == 1
            )

            assess = AssessmentInput("d-1", "DEV", t.task, "", (), candidates)
            assert await runtime.assess(assess) == await local.assess(assess)
        finally:
            await local.close()


async def test_a_repeated_call_is_queued_once_and_a_stored_answer_is_reused(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant", delay_s=0.3) as lg:
        await start_worker(lg.url)
        t = turn("dev-agent-3")
        a, b = await asyncio.gather(runtime.run_turn(t), runtime.run_turn(t))
        assert a == b and lg.counters.calls == 1
        again = await runtime.run_turn(t)  # a re-dispatch: answered from the results stream
        assert again == a and lg.counters.calls == 1
        assert runtime.deduplicated == 1 and runtime.reused == 1  # looked up, not queued again


async def test_a_call_failing_on_every_attempt_is_dead_lettered_with_its_reason(
    nc: NATS, names: QueueNames, runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant", modes_by_user={"dev-agent-2": "fail"}) as lg:
        worker = await start_worker(lg.url, max_deliver=3)
        ok, bad = await asyncio.gather(
            runtime.run_turn(turn("dev-agent-1")),
            runtime.run_turn(turn("dev-agent-2")),
            return_exceptions=True,
        )
        assert not isinstance(ok, BaseException)
        assert isinstance(bad, AgentTurnError)
        assert "500" in str(bad) and "attempt 3 of 3" in str(bad)
        assert lg.counters.failed == 3 and worker.stats.retried == 2
        parked = await dead_letters(nc, names)
        assert len(parked) == 1
        headers = parked[0].headers or {}
        assert "500" in headers["Fleet-Dead-Letter-Reason"]
        assert headers["Fleet-Deliveries"] == "3"
        assert WorkMessage.from_bytes(parked[0].data).key == turn("dev-agent-2").key
        await queue_drained(nc, names)  # the parked call is gone from the work queue


async def test_work_past_its_deadline_is_answered_expired_without_calling_the_model(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant") as lg:
        with pytest.raises(AgentTurnError, match="no worker answered"):
            await runtime.run_turn(turn(timeout_s=0.2))  # no worker running yet
        worker = await start_worker(lg.url)
        await eventually(lambda: worker.stats.expired == 1)
        await eventually(lambda: runtime.dropped_results == 1)  # nobody awaits it any more
        assert lg.counters.calls == 0


class _StalledWorker(AgentWorker):
    """A worker that stops heart-beating: each delivery looks like a worker that died."""

    async def _heartbeat(self, msg: Any, work: Any) -> None:
        return None

    async def _joined(self, msg: Any, work: Any, running: Any) -> bool:
        return False  # as another worker would: it does not hold the dead one's call


async def test_a_call_whose_workers_keep_dying_is_parked_by_the_advisory(
    nc: NATS, names: QueueNames, runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant", modes_by_user={"dev-agent-1": "hang"}) as lg:
        worker = await start_worker(lg.url, cls=_StalledWorker, ack_wait_s=0.5, max_deliver=2)
        with pytest.raises(AgentTurnError, match="delivered 2 times with no answer"):
            await runtime.run_turn(turn(timeout_s=20.0))
        assert lg.counters.calls == 2
        assert worker.stats.dead_lettered == 1
        parked = await dead_letters(nc, names)
        assert "died or stalled" in (parked[0].headers or {})["Fleet-Dead-Letter-Reason"]
        await queue_drained(nc, names)


def _unreadable(caplog: pytest.LogCaptureFixture) -> int:
    return sum("unreadable message" in r.getMessage() for r in caplog.records)


async def test_answers_still_arrive_after_many_idle_polls_and_a_poisoned_result(
    nc: NATS, names: QueueNames, start_worker: WorkerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 7's stall: an idle poll of the results consumer sometimes returns an empty batch
    (the server's 408 beats the client's timer), and a malformed message may land on a results
    subject. Neither may stop the listener: a call made afterwards still gets its answer, not a
    timeout. ~150 polls of 20 ms make the empty batch all but certain (about 1 poll in 12)."""
    rt = NatsAgentRuntime(nc, names, grace_s=2.0, fetch_timeout_s=0.02)
    await rt.start()
    try:
        async with LoadGenServer("instant") as lg:
            await start_worker(lg.url)
            await asyncio.sleep(3.0)  # idle: only empty polls
            js = nc.jetstream()
            await js.publish(f"{names.results_prefix}.turn.x", b'{"kind": "turn"}')  # no key
            await js.publish(f"{names.results_prefix}.turn.y", b"\xff not json")
            await eventually(lambda: _unreadable(caplog) == 2, what="the bad results unread")
            result = await rt.run_turn(turn("dev-agent-2", timeout_s=5.0))
            assert result.agent_id == "dev-agent-2" and result.content
    finally:
        await rt.close()
