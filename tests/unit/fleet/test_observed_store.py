"""``ObservedStore`` serves every store method the API and dispatchers call, each written out (no
``__getattr__`` for a write to slip through untimed), and times every write under its op."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

from aggregates import Deliberation, Plan
from application.app import FleetApplication
from application.ports import PlanDeliberationStore, RecordStore, StoryStore
from application.stores import ApplicationDeliberationStore
from fleet.metrics import FleetMetrics
from fleet.observed_store import ObservedStore
from tests.support.deliberations import requested

pytestmark = pytest.mark.timeout(60)

NOW = datetime(2026, 1, 1, tzinfo=UTC)

READ_SIDE_ONLY = {"drain", "history"}
"""``ApplicationDeliberationStore`` methods the wrapper does not serve: the node drains the store
itself at shutdown, and the read side (history, the watch hub) reads the store directly."""


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.isfunction(member)
    }


def test_every_store_method_is_written_out_and_none_falls_through() -> None:
    ports = _public_methods(PlanDeliberationStore) | _public_methods(StoryStore)
    assert ports == {
        "create",
        "get",
        "last_known",
        "update",
        "update_in_order",
        "create_plan",
        "update_plan",
        "get_plan",
        "create_story",
        "update_story",
    }
    assert ports <= set(vars(ObservedStore)), "a port method ObservedStore does not write out"
    records = _public_methods(RecordStore)
    assert records == {"create_record", "get_record", "update_record"}
    assert records <= set(vars(ObservedStore)), "a record method ObservedStore does not write out"
    assert _public_methods(ApplicationDeliberationStore) - ports - records == READ_SIDE_ONLY
    assert not hasattr(ObservedStore, "__getattr__")


def _new_deliberation() -> Deliberation:
    return requested(task="Write a function", num_agents=1, timeout_seconds=600)


def _start(d: Deliberation) -> Deliberation:
    d.start()
    return d


def _mark(p: Plan) -> None:
    p.mark_requested(p.task_ids())


async def test_every_write_is_timed_under_its_op() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    metrics = FleetMetrics()
    store = ObservedStore(ApplicationDeliberationStore(app), metrics)

    d, created = await store.create(_new_deliberation())
    assert created and (await store.get(d.id)).id == d.id
    await store.update(d.id, _start)
    await store.update_in_order(d.id, [lambda x: x.cancel("enough")])
    assert (await store.last_known(d.id)).status.value == "CANCELLED"
    plan, _ = await store.create_plan(Plan.approve(plan_id="PL-1", story_id="S", approved_at=NOW))
    await store.update_plan(plan.id, _mark)
    assert (await store.get_plan(plan.id)).id == plan.id

    ops = ("create", "update", "update_in_order", "create_plan", "update_plan")
    for op in ops:
        count = metrics.registry.get_sample_value("fleet_store_write_seconds_count", {"op": op})
        assert count == 1, op
