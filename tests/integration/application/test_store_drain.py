"""The ledger's group commit answers a caller once its events are stored and takes the snapshots
they call for afterwards: ``drain`` waits for those, so a node that stops right after an update
keeps its snapshot (without it the snapshot raced the closing store and was lost, logged as
"snapshot ... failed: the event store is closed")."""

from __future__ import annotations

import asyncio
import functools
import logging

import pytest

from aggregates import Deliberation
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from tests.integration.eventstore.test_fleet_on_jetstream import _propose, _request

pytestmark = pytest.mark.timeout(60)


async def _to_version_50(store: ApplicationDeliberationStore) -> Deliberation:
    """16 agents, three rounds: the last proposal of round 2 is version 50, the snapshot point
    (FleetApplication snapshots a Deliberation every 50 events), and the last update made."""
    d, _ = await store.create(_request("drain-before-close", agents=16, rounds=3))
    await store.update(d.id, lambda x: x.start())
    for round_no in range(3):
        changes = [
            functools.partial(_propose, agent=a, round_no=round_no) for a in d.default_agents()
        ]
        await asyncio.gather(*(store.update(d.id, c) for c in changes))
    return d


async def test_a_store_drained_before_closing_keeps_the_last_snapshot(
    nats_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="fleet")
    app = await asyncio.to_thread(FleetApplication, nats_env)
    try:
        store = ApplicationDeliberationStore(app)
        d = await _to_version_50(store)
        await store.drain()  # what the node does as it stops, before the application closes
    finally:
        app.close()
    assert "snapshot" not in caplog.text, caplog.text

    reopened = await asyncio.to_thread(FleetApplication, nats_env)
    try:
        assert reopened.snapshots is not None
        assert [s.originator_version for s in reopened.snapshots.get(d.id)] == [50]
        assert reopened.repository.get(d.id).version == 50
    finally:
        reopened.close()


async def test_drain_returns_at_once_with_nothing_in_flight(nats_env: dict[str, str]) -> None:
    app = await asyncio.to_thread(FleetApplication, nats_env)
    try:
        store = ApplicationDeliberationStore(app)
        await asyncio.wait_for(store.drain(), 1)  # no writer yet
        d, _ = await store.create(_request("drain-idle"))
        await store.update(d.id, lambda x: x.start())
        await asyncio.wait_for(store.drain(), 5)
        await asyncio.wait_for(store.drain(), 1)  # idempotent
    finally:
        app.close()
