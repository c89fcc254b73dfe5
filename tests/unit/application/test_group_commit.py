"""Group commit in ApplicationDeliberationStore, on the in-memory (POPO) application.

The checks live in tests/support/group_commit_contract.py, so the JetStream integration tests
(tests/integration/application/test_group_commit.py) run the very same ones.
"""

from __future__ import annotations

import pytest

from application.app import FleetApplication
from tests.support import group_commit_contract as contract

pytestmark = pytest.mark.timeout(60)


# ---------------------------------------------------------------------- on POPO


def popo() -> FleetApplication:
    return FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


async def test_concurrent_updates_land_exactly_once() -> None:
    await contract.check_concurrent_updates_land_exactly_once(popo())


async def test_failing_change_affects_only_its_caller() -> None:
    await contract.check_failing_change_affects_only_its_caller(popo())


async def test_result_is_the_state_after_its_own_change() -> None:
    await contract.check_result_is_the_state_after_its_own_change(popo())


async def test_conflict_with_another_writer_is_retried() -> None:
    app = popo()
    # POPO keeps events in the application's own memory: the "other writer" is the same app
    # used past the store (its cache), which is what another process looks like to the store.
    await contract.check_conflict_with_another_writer_is_retried(app, app)


async def test_each_change_is_its_own_unit() -> None:
    await contract.check_each_change_is_its_own_unit(popo())


async def test_changes_in_order_each_land_after_the_ones_before() -> None:
    await contract.check_changes_in_order_each_land_after_the_ones_before(popo())


async def test_a_created_aggregate_is_updated_without_a_replay() -> None:
    await contract.check_a_created_aggregate_is_updated_without_a_replay(popo())


async def test_the_created_copy_is_the_stored_state() -> None:
    await contract.check_the_created_copy_is_the_stored_state(popo())


async def test_get_is_never_stale_after_another_writer() -> None:
    app = popo()
    await contract.check_get_is_never_stale_after_another_writer(app, app)
