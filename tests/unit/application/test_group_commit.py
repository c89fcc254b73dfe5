"""Group commit in ApplicationDeliberationStore, on the in-memory (POPO) application.

The checks live in tests/support/group_commit_contract.py, so the JetStream integration tests
(tests/integration/application/test_group_commit.py) run the very same ones.
"""

from __future__ import annotations

import asyncio

import pytest

from aggregates import Deliberation
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from tests.support.group_commit_contract import (
    check_a_created_aggregate_is_updated_without_a_replay,
    check_changes_in_order_each_land_after_the_ones_before,
    check_concurrent_updates_land_exactly_once,
    check_conflict_with_another_writer_is_retried,
    check_each_change_is_its_own_unit,
    check_failing_change_affects_only_its_caller,
    check_get_is_never_stale_after_another_writer,
    check_result_is_the_state_after_its_own_change,
    proposals_in_history,
    propose,
    started,
)

pytestmark = pytest.mark.timeout(60)


# ---------------------------------------------------------------------- on POPO


def popo() -> FleetApplication:
    return FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


async def test_concurrent_updates_land_exactly_once() -> None:
    await check_concurrent_updates_land_exactly_once(popo())


async def test_failing_change_affects_only_its_caller() -> None:
    await check_failing_change_affects_only_its_caller(popo())


async def test_result_is_the_state_after_its_own_change() -> None:
    await check_result_is_the_state_after_its_own_change(popo())


async def test_conflict_with_another_writer_is_retried() -> None:
    app = popo()
    # POPO keeps events in the application's own memory: the "other writer" is the same app
    # used past the store (its cache), which is what another process looks like to the store.
    await check_conflict_with_another_writer_is_retried(app, app)


async def test_each_change_is_its_own_unit() -> None:
    await check_each_change_is_its_own_unit(popo())


async def test_changes_in_order_each_land_after_the_ones_before() -> None:
    await check_changes_in_order_each_land_after_the_ones_before(popo())


async def test_a_created_aggregate_is_updated_without_a_replay() -> None:
    await check_a_created_aggregate_is_updated_without_a_replay(popo())


async def test_get_is_never_stale_after_another_writer() -> None:
    app = popo()
    await check_get_is_never_stale_after_another_writer(app, app)


async def test_without_group_commit_changes_in_order_behave_the_same() -> None:
    app = popo()
    store = ApplicationDeliberationStore(app, group_commit=False)
    d = await started(store)
    a, b, _ = d.agents

    def fails(x: Deliberation) -> None:
        raise ValueError("no")

    with pytest.raises(ValueError):
        await store.update_in_order(d.id, [propose(b), fails, propose(a)])
    assert proposals_in_history(await store.history(d.id)) == [b, a]


async def test_without_group_commit_updates_save_one_by_one() -> None:
    store = ApplicationDeliberationStore(popo(), group_commit=False)
    d = await started(store)
    await asyncio.gather(*(store.update(d.id, propose(a)) for a in d.agents))
    assert store.groups_committed == 0
    assert sorted(proposals_in_history(await store.history(d.id))) == sorted(d.agents)
