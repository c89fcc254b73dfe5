"""The dispatcher's policy on the in-memory (POPO) application, with a fake agent runtime.

A unit test of the dispatcher's logic only: what becomes an event when agents answer, fail, hang,
or when a restarted dispatcher finds work half done. The same paths run on real NATS, Ray and
an LLM server in tests/e2e.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from eventsourcing.persistence import OperationalError

from agent_runtime.api import (
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
)
from aggregates import AgentAnswer, CheckOutcome, Deliberation, DeliberationStatus
from application.app import FleetApplication
from application.errors import DeliberationNotFoundError
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from tests.support.deliberations import requested
from tests.support.doubles import Behaviour, FakeAgentRuntime
from tests.support.waiting import eventually, until_terminal


def app() -> FleetApplication:
    return FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def request(a: FleetApplication, task_id: str, timeout: int = 30, agents: int = 3) -> Deliberation:
    d = requested(task_id, task="do it", num_agents=agents, timeout_seconds=timeout)
    a.save(d)
    return d


async def test_three_answers_complete_with_the_best_scored_winner() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    rt = FakeAgentRuntime({"dev-agent-3": _say("a much longer and therefore better answer " * 2)})
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        d = request(a, "ok")
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.COMPLETED
    assert len(done.proposals) == 3
    assert done.winner == "dev-agent-3"
    # The calls went out before Started was stored, but no answer was recorded before it.
    types = [type(e).__name__ for e in await store.history(d.id)]
    assert types[:3] == ["Requested", "Started", "ProposalReceived"]


class StoreFailingFirstUpdate(ApplicationDeliberationStore):
    """The real store, except that its first update fails as if NATS were unreachable."""

    failed = False

    async def update(self, deliberation_id: Any, change: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise OperationalError("NATS unreachable (test)")
        return await super().update(deliberation_id, change)


async def test_answers_are_not_recorded_when_started_could_not_be() -> None:
    a = app()
    store = StoreFailingFirstUpdate(a)
    rt = FakeAgentRuntime()
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "no-start").id)
    assert done.status is DeliberationStatus.FAILED
    assert "NATS unreachable" in done.reason
    assert done.proposals == {}
    assert len(rt.calls) == 3  # they had gone out; their answers were not recorded


async def test_failures_are_recorded_and_the_rest_complete() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    rt = FakeAgentRuntime({"dev-agent-1": _fail("endpoint said 500")})
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "one-fails").id)
    assert done.status is DeliberationStatus.COMPLETED
    assert done.failures[("dev-agent-1", 0)].error == "endpoint said 500"
    assert done.winner in ("dev-agent-2", "dev-agent-3")


async def test_every_agent_failing_is_failed_with_reasons() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    rt = FakeAgentRuntime({f"dev-agent-{i}": _fail(f"no route {i}") for i in (1, 2, 3)})
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "all-fail").id)
    assert done.status is DeliberationStatus.FAILED
    assert "no route 2" in done.reason


async def test_deadline_times_out_and_keeps_what_arrived() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    rt = FakeAgentRuntime({"dev-agent-2": _hang(), "dev-agent-3": _hang()})
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "slow", timeout=1).id)
    assert done.status is DeliberationStatus.TIMEOUT
    assert list(done.final_proposals()) == ["dev-agent-1"]
    assert done.missing == ["dev-agent-2", "dev-agent-3"]


async def test_a_restarted_dispatcher_runs_only_what_is_outstanding() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    d = request(a, "half-done")
    d = await store.update(d.id, _start)
    await store.update(
        d.id,
        lambda d: d.receive_proposal(
            agent_id="dev-agent-1",
            round=0,
            answer=AgentAnswer(content="kept", model="m", tokens=1, latency_ms=1),
        ),
    )
    rt = FakeAgentRuntime()
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):  # a fresh process
        done = await until_terminal(store, d.id)
    assert sorted(rt.calls) == [f"{d.id}:0:dev-agent-2", f"{d.id}:0:dev-agent-3"]
    assert done.proposals[("dev-agent-1", 0)].content == "kept"
    assert done.status is DeliberationStatus.COMPLETED


@pytest.mark.timeout(20)
async def test_a_deliberation_past_its_deadline_before_restart_times_out_at_once() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    d = request(a, "expired", timeout=1)
    await asyncio.sleep(1.1)
    rt = FakeAgentRuntime()
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.TIMEOUT
    assert rt.calls == []
    # Timed out without ever being started: nobody took it before its deadline.
    types = [type(e).__name__ for e in await store.history(d.id)]
    assert types == ["Requested", "TimedOut"]


async def test_scores_land_before_the_decision_and_a_restart_completes_from_them() -> None:
    a = app()
    store = ApplicationDeliberationStore(a)
    rt = FakeAgentRuntime()
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "ordered").id)
    types = [type(e).__name__ for e in await store.history(done.id)]
    assert types[-4:] == ["ProposalScored"] * 3 + ["Completed"]

    # A dispatcher that died after storing one score (of three): a fresh one scores the other
    # two only, and completes once.
    d = request(a, "scored-in-part")
    d = await store.update(d.id, _start)
    for i in (1, 2, 3):
        agent = f"dev-agent-{i}"
        await store.update(
            d.id,
            lambda d, agent=agent: d.receive_proposal(
                agent_id=agent,
                round=0,
                answer=AgentAnswer(content=f"from {agent}", model="m", tokens=1, latency_ms=1),
            ),
        )
    await store.update(
        d.id,
        lambda d: d.score(
            agent_id="dev-agent-1", score=0.99, checks=[CheckOutcome("policy", True, 1.0)]
        ),
    )
    seen: list[list[str]] = []
    real_assess = rt.assess

    async def assess(request: AssessmentInput) -> list[Assessment]:
        seen.append([c.agent_id for c in request.candidates])
        return await real_assess(request)

    rt.assess = assess  # type: ignore[method-assign]
    async with DeliberationDispatcher(
        store, ApplicationEventFeed(a), rt, options=DispatcherOptions(peer_review=False)
    ):
        done = await until_terminal(store, d.id)
    assert seen == [["dev-agent-2", "dev-agent-3"]]
    assert done.status is DeliberationStatus.COMPLETED and done.winner == "dev-agent-1"
    types = [type(e).__name__ for e in await store.history(d.id)]
    assert types.count("ProposalScored") == 3 and types.count("Completed") == 1


def _start(d: Deliberation) -> Deliberation:
    d.start()
    return d


def _say(text: str) -> Behaviour:
    async def act(turn: AgentTurn) -> str:
        return text

    return act


def _fail(error: str) -> Behaviour:
    async def act(turn: AgentTurn) -> str:
        raise AgentTurnError(error)

    return act


def _after(release: asyncio.Event) -> Behaviour:
    """Answer once ``release`` is set."""

    async def act(turn: AgentTurn) -> str:
        await release.wait()
        return f"answer from {turn.agent_id}"

    return act


def _held_agents(
    concurrency: int,
) -> tuple[
    FleetApplication,
    ApplicationDeliberationStore,
    asyncio.Event,
    FakeAgentRuntime,
    DeliberationDispatcher,
]:
    """A dispatcher bounded at ``concurrency`` whose agents answer once the event is set."""
    a = app()
    store = ApplicationDeliberationStore(a)
    release = asyncio.Event()
    rt = FakeAgentRuntime({f"dev-agent-{i}": _after(release) for i in (1, 2, 3)})
    options = DispatcherOptions(concurrency=concurrency)
    return (
        a,
        store,
        release,
        rt,
        DeliberationDispatcher(store, ApplicationEventFeed(a), rt, options=options),
    )


def _hang() -> Behaviour:
    async def act(turn: AgentTurn) -> str:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return act


class LaggingReplicaStore(ApplicationDeliberationStore):
    """Reads "not found" the first few times, as a lagging replica of an R3 stream answers a
    read of a deliberation that was just requested."""

    def __init__(self, a: FleetApplication, misses: int) -> None:
        super().__init__(a)
        self.misses = misses

    async def last_known(self, deliberation_id: Any) -> Deliberation:
        if self.misses > 0:
            self.misses -= 1
            raise DeliberationNotFoundError(f"Deliberation {deliberation_id} not found")
        return await super().last_known(deliberation_id)


async def test_a_deliberation_that_reads_as_not_found_at_first_is_still_driven() -> None:
    a = app()
    store = LaggingReplicaStore(a, misses=3)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), FakeAgentRuntime()):
        d = request(a, "lagging-replica")
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.COMPLETED and store.misses == 0


async def test_past_its_concurrency_the_dispatcher_drives_the_rest_as_others_end() -> None:
    """``concurrency`` bounds the drivers; the rest stay PENDING, then start as slots free."""
    a, store, release, _, dispatcher = _held_agents(concurrency=2)
    most = 0
    async with dispatcher as disp:
        ds = [request(a, f"bounded-{i}") for i in range(5)]
        await eventually(lambda: disp.active == 2)
        for _ in range(20):  # held there: the other three are not started
            most = max(most, disp.active)
            await asyncio.sleep(0.01)
        statuses = [(await store.get(d.id)).status for d in ds]
        assert statuses.count(DeliberationStatus.PENDING) == 3
        release.set()
        done = [await until_terminal(store, d.id) for d in ds]
        most = max(most, disp.active)
    assert most == 2
    assert {d.status for d in done} == {DeliberationStatus.COMPLETED}


async def test_a_waiting_deliberation_cancelled_is_never_driven() -> None:
    a, store, release, rt, dispatcher = _held_agents(concurrency=1)
    async with dispatcher as disp:
        first, waiting = request(a, "first"), request(a, "waiting")
        await eventually(lambda: disp.active == 1)
        await store.update(waiting.id, lambda d: d.cancel("not needed"))
        release.set()
        assert (await until_terminal(store, first.id)).status is DeliberationStatus.COMPLETED
        assert (await until_terminal(store, waiting.id)).status is DeliberationStatus.CANCELLED
        await eventually(lambda: disp.active == 0)
    assert len(rt.calls) == 3  # only the first deliberation's agents were called


async def test_a_deliberation_waiting_past_its_deadline_times_out_at_the_deadline() -> None:
    """Held behind the concurrency bound, it reads TIMEOUT at its deadline, not PENDING until a
    slot frees; the one being driven keeps going."""
    a, store, release, rt, dispatcher = _held_agents(concurrency=1)
    async with dispatcher as disp:
        driven = request(a, "driven", timeout=30)
        await eventually(lambda: disp.active == 1)
        waiting = request(a, "waiting", timeout=1)
        late = await until_terminal(store, waiting.id, timeout=5)
        assert late.status is DeliberationStatus.TIMEOUT
        assert late.missing == ["dev-agent-1", "dev-agent-2", "dev-agent-3"]
        assert (await store.get(driven.id)).status is DeliberationStatus.IN_PROGRESS
        release.set()
        assert (await until_terminal(store, driven.id)).status is DeliberationStatus.COMPLETED
    assert len(rt.calls) == 3  # the waiting one's agents were never called
