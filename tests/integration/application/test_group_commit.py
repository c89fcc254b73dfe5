"""Group commit in ApplicationDeliberationStore on JetStream: the unit checks, on a real stream,
and a conflict from a second application instance (what another process looks like)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from eventsourcing.persistence import OperationalError

from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from tests.support import group_commit_contract as contract

pytestmark = pytest.mark.timeout(60)


@pytest_asyncio.fixture
async def app(nats_env: dict[str, str]) -> AsyncIterator[FleetApplication]:
    a = await asyncio.to_thread(FleetApplication, nats_env)
    yield a
    a.close()


@pytest_asyncio.fixture
async def other(nats_env: dict[str, str]) -> AsyncIterator[FleetApplication]:
    a = await asyncio.to_thread(FleetApplication, nats_env)
    yield a
    a.close()


async def test_concurrent_updates_land_exactly_once(app: FleetApplication) -> None:
    await contract.check_concurrent_updates_land_exactly_once(app)


async def test_failing_change_affects_only_its_caller(app: FleetApplication) -> None:
    await contract.check_failing_change_affects_only_its_caller(app)


async def test_result_is_the_state_after_its_own_change(app: FleetApplication) -> None:
    await contract.check_result_is_the_state_after_its_own_change(app)


async def test_conflict_with_another_application_is_retried(
    app: FleetApplication, other: FleetApplication
) -> None:
    await contract.check_conflict_with_another_writer_is_retried(app, other)


async def test_each_change_is_its_own_unit(app: FleetApplication) -> None:
    await contract.check_each_change_is_its_own_unit(app)


async def test_changes_in_order_each_land_after_the_ones_before(app: FleetApplication) -> None:
    await contract.check_changes_in_order_each_land_after_the_ones_before(app)


async def test_a_created_aggregate_is_updated_without_a_replay(app: FleetApplication) -> None:
    await contract.check_a_created_aggregate_is_updated_without_a_replay(app)


async def test_the_created_copy_is_the_stored_state(app: FleetApplication) -> None:
    await contract.check_the_created_copy_is_the_stored_state(app)


async def test_get_is_never_stale_after_another_application(
    app: FleetApplication, other: FleetApplication
) -> None:
    await contract.check_get_is_never_stale_after_another_writer(app, other)


async def test_a_failed_save_fails_only_that_aggregates_callers(app: FleetApplication) -> None:
    """NATS refuses the writes to one aggregate: its callers hear why (nothing of theirs is
    stored), the group's other callers succeed, and the next update starts from the store."""
    store = ApplicationDeliberationStore(app)
    d1 = await contract.started(store)
    d2 = await contract.started(store)
    c = app.factory.connection  # type: ignore[attr-defined]
    nc = (await c.loop_log()).nc  # this loop's own connection: the ledger writes on it
    real = nc.publish
    blocked = c.subject("e", d1.id)

    async def publish(subject: str, payload: bytes = b"", **kw: Any) -> Any:
        if subject == blocked:
            raise OperationalError("refused for the test")
        return await real(subject, payload, **kw)

    nc.publish = publish
    try:
        a1, b1, _ = d1.agents
        results = await asyncio.gather(
            store.update(d1.id, contract.propose(a1)),
            store.update(d2.id, contract.propose(d2.agents[0])),
            store.update(d1.id, contract.propose(b1)),
            return_exceptions=True,
        )
    finally:
        nc.publish = real
    assert isinstance(results[0], OperationalError)
    assert results[1] is True
    assert isinstance(results[2], OperationalError)
    assert contract.proposals_in_history(await store.history(d1.id)) == []
    assert contract.proposals_in_history(await store.history(d2.id)) == [d2.agents[0]]
    assert await store.update(d1.id, contract.propose(b1)) is True  # from the stored state
    assert contract.proposals_in_history(await store.history(d1.id)) == [b1]
