"""Group commit in ApplicationDeliberationStore on JetStream: the unit checks, on a real stream,
and a conflict from a second application instance (what another process looks like)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from fleet.application import FleetApplication
from tests.unit.fleet.test_ledger_group_commit import (
    check_batches_split_at_the_event_limit,
    check_concurrent_updates_land_exactly_once,
    check_conflict_with_another_writer_is_retried,
    check_failing_change_affects_only_its_caller,
    check_result_is_the_state_after_its_own_change,
)

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
    await check_concurrent_updates_land_exactly_once(app)


async def test_failing_change_affects_only_its_caller(app: FleetApplication) -> None:
    await check_failing_change_affects_only_its_caller(app)


async def test_result_is_the_state_after_its_own_change(app: FleetApplication) -> None:
    await check_result_is_the_state_after_its_own_change(app)


async def test_conflict_with_another_application_is_retried(
    app: FleetApplication, other: FleetApplication
) -> None:
    await check_conflict_with_another_writer_is_retried(app, other)


async def test_batches_split_at_the_event_limit(app: FleetApplication) -> None:
    await check_batches_split_at_the_event_limit(app)
