"""The group-commit contract of ApplicationDeliberationStore, as plain async checks.

Each check takes the application(s) to run on, so the in-memory (POPO) tests
(tests/unit/application/test_group_commit.py) and the JetStream ones
(tests/integration/application/test_group_commit.py) run the very same checks.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from aggregates import AgentAnswer, AgentId, Deliberation, DuplicateProposalError
from application.app import FleetApplication
from application.errors import DeliberationNotFoundError
from application.stores import ApplicationDeliberationStore
from tests.support.deliberations import requested


def new_deliberation(num_agents: int = 3) -> Deliberation:
    return requested(task="Write a function", num_agents=num_agents, timeout_seconds=600)


def propose(agent: str, text: str = "an answer") -> Callable[[Deliberation], bool]:
    def change(d: Deliberation) -> bool:
        return d.receive_proposal(
            agent_id=AgentId(agent),
            round=0,
            answer=AgentAnswer(content=text, model="m", tokens=1, latency_ms=1),
        )

    return change


def start(d: Deliberation) -> Deliberation:
    d.start()
    return d


async def started(store: ApplicationDeliberationStore, num_agents: int = 3) -> Deliberation:
    d, created = await store.create(new_deliberation(num_agents))
    assert created
    return await store.update(d.id, start)


def proposals_in_history(events: list[Any]) -> list[str]:
    return [e.agent_id for e in events if isinstance(e, Deliberation.ProposalReceived)]


async def check_concurrent_updates_land_exactly_once(app: FleetApplication) -> None:
    store = ApplicationDeliberationStore(app)
    ds = await asyncio.gather(*(started(store) for _ in range(30)))
    before = store.groups_committed
    calls = [store.update(d.id, propose(a)) for d in ds for a in d.agents]
    results = await asyncio.gather(*calls)
    assert all(r is True for r in results)
    # Batched: far fewer saves than updates.
    assert store.groups_committed - before < len(calls) / 3
    fresh = ApplicationDeliberationStore(app)  # no cache: read from the store
    for d in ds:
        events = await fresh.history(d.id)
        assert sorted(proposals_in_history(events)) == sorted(d.agents)
        got = await fresh.get(d.id)
        assert set(a for a, _ in got.proposals) == set(d.agents)


async def check_failing_change_affects_only_its_caller(app: FleetApplication) -> None:
    store = ApplicationDeliberationStore(app)
    d1 = await started(store)
    d2 = await started(store)
    a, b, c = d1.agents

    def half_then_fail(d: Deliberation) -> None:
        propose(b)(d)  # an event is triggered, then the command fails: nothing may be saved
        raise ValueError("boom")

    before = store.groups_committed
    results = await asyncio.gather(
        store.update(d1.id, propose(a)),
        store.update(d2.id, propose(d2.agents[0])),
        store.update(d1.id, half_then_fail),
        store.update(d1.id, propose(a)),  # a duplicate: fails alone
        store.update(uuid.uuid4(), propose(a)),  # no such deliberation
        store.update(d1.id, propose(c)),
        return_exceptions=True,
    )
    assert store.groups_committed - before == 1  # all of them went in one group
    assert results[0] is True
    assert results[1] is True
    assert isinstance(results[2], ValueError)
    assert isinstance(results[3], DuplicateProposalError)
    assert isinstance(results[4], DeliberationNotFoundError)
    assert results[5] is True
    fresh = ApplicationDeliberationStore(app)
    assert proposals_in_history(await fresh.history(d1.id)) == [a, c]  # in order, b dropped
    assert proposals_in_history(await fresh.history(d2.id)) == [d2.agents[0]]
    # The cached state agrees with the stored one, and b can still answer.
    assert await store.update(d1.id, propose(b)) is True
    assert proposals_in_history(await fresh.history(d1.id)) == [a, c, b]


async def check_result_is_the_state_after_its_own_change(app: FleetApplication) -> None:
    store = ApplicationDeliberationStore(app)
    d = await started(store)
    a, b, _ = d.agents

    def propose_and_return(agent: str) -> Callable[[Deliberation], Deliberation]:
        def change(x: Deliberation) -> Deliberation:
            propose(agent)(x)
            return x

        return change

    first, second = await asyncio.gather(
        store.update(d.id, propose_and_return(a)), store.update(d.id, propose_and_return(b))
    )
    assert set(x for x, _ in first.proposals) == {a}
    assert set(x for x, _ in second.proposals) == {a, b}


async def check_conflict_with_another_writer_is_retried(
    app: FleetApplication, other: FleetApplication
) -> None:
    store = ApplicationDeliberationStore(app)
    d = await started(store)  # now cached in store
    bystanders = [await started(store) for _ in range(5)]
    a, b, _ = d.agents

    def write_elsewhere() -> None:
        x = other.repository.get(d.id)
        x.receive_proposal(
            agent_id=a,
            round=0,
            answer=AgentAnswer(content="other", model="m", tokens=1, latency_ms=1),
        )
        other.save(x)

    await asyncio.to_thread(write_elsewhere)  # store's cached copy is now stale
    before, retried = store.groups_committed, store.conflicts_retried
    results = await asyncio.gather(
        *(store.update(x.id, propose(x.agents[0])) for x in bystanders[:3]),
        store.update(d.id, propose(b)),
        *(store.update(x.id, propose(x.agents[0])) for x in bystanders[3:]),
    )
    assert all(r is True for r in results)
    assert store.groups_committed - before == 1  # one group ...
    assert store.conflicts_retried - retried == 1  # ... in which only d was reloaded
    fresh = ApplicationDeliberationStore(app)
    assert proposals_in_history(await fresh.history(d.id)) == [a, b]
    for x in bystanders:
        assert proposals_in_history(await fresh.history(x.id)) == [x.agents[0]]
    # A change re-applied after the conflict sees the other writer's event: a duplicate fails.
    with pytest.raises(DuplicateProposalError):
        await store.update(d.id, propose(a))


async def check_each_change_is_its_own_unit(app: FleetApplication) -> None:
    """Three changes to one aggregate in one group: each saved apart, in order; a change that
    records several events keeps them together; a conflict on one aggregate fails no other."""
    store = ApplicationDeliberationStore(app)
    d = await started(store)
    a, b, c = d.agents

    def two_events(x: Deliberation) -> None:  # one command, two events: one atomic unit
        propose(b)(x)
        propose(c)(x)

    before = store.groups_committed
    await asyncio.gather(store.update(d.id, propose(a)), store.update(d.id, two_events))
    assert store.groups_committed - before == 1
    fresh = ApplicationDeliberationStore(app)
    assert proposals_in_history(await fresh.history(d.id)) == [a, b, c]
    got = await fresh.get(d.id)
    assert got.version == d.version + 3


async def check_changes_in_order_each_land_after_the_ones_before(app: FleetApplication) -> None:
    store = ApplicationDeliberationStore(app)
    d = await started(store)
    a, b, c = d.agents

    def fails(x: Deliberation) -> None:
        raise ValueError("not this one")

    with pytest.raises(ValueError, match="not this one"):
        await store.update_in_order(d.id, [propose(b), fails, propose(a), propose(c)])
    fresh = ApplicationDeliberationStore(app)
    # The failing change recorded nothing and stopped nothing; the others landed in order.
    assert proposals_in_history(await fresh.history(d.id)) == [b, a, c]
    assert await store.update_in_order(d.id, []) == []


async def check_a_created_aggregate_is_updated_without_a_replay(app: FleetApplication) -> None:
    store = ApplicationDeliberationStore(app)
    d, created = await store.create(new_deliberation())
    assert created
    replays = 0
    real_get = app.repository.get

    def counting_get(*args: Any, **kwargs: Any) -> Any:
        nonlocal replays
        replays += 1
        return real_get(*args, **kwargs)

    app.repository.get = counting_get  # type: ignore[method-assign]
    try:
        got = await store.update(d.id, start)
        await store.update(got.id, propose(got.agents[0]))
    finally:
        app.repository.get = real_get  # type: ignore[method-assign]
    assert replays == 0
    # Requested twice (same task id, so same aggregate id): the stored one comes back.
    twin = Deliberation.request(
        task_id=d.task_id,
        task="Write a function",
        role="DEV",
        num_agents=3,
        rounds=1,
        requested_at=datetime.now(tz=UTC),
        timeout_seconds=600,
    )
    assert twin.id == d.id
    again, created = await store.create(twin)
    assert not created and again.version == d.version + 2  # Started and one proposal
    again, created = await store.create(d)  # the object saved already: nothing new
    assert not created


async def check_the_created_copy_is_the_stored_state(app: FleetApplication) -> None:
    """The store caches what it stored, not the caller's object, which the caller may change."""
    store = ApplicationDeliberationStore(app)
    mine = new_deliberation()
    d, created = await store.create(mine)
    assert created and d is mine
    mine.start()  # the caller's object, changed after the save and never saved
    kept = await store.last_known(mine.id)
    assert kept is not mine and kept.version == 1 and not kept.pending_events
    assert vars(kept) == vars(app.repository.get(mine.id))


async def check_get_is_never_stale_after_another_writer(
    app: FleetApplication, other: FleetApplication
) -> None:
    store = ApplicationDeliberationStore(app)
    d, _ = await store.create(new_deliberation())  # cached here, as created
    assert (await store.get(d.id)).status.value == "PENDING"

    def start_elsewhere() -> None:  # another process takes it
        x = other.repository.get(d.id)
        x.start()
        other.save(x)

    await asyncio.to_thread(start_elsewhere)
    assert (await store.get(d.id)).status.value == "IN_PROGRESS"  # not the cached PENDING copy
    # The writer's own view may lag (its next write is checked), and catches up on a write.
    assert (await store.last_known(d.id)).version >= d.version
    got = await store.update(d.id, start)
    assert got.status.value == "IN_PROGRESS"
    assert (await store.last_known(d.id)).version == got.version
