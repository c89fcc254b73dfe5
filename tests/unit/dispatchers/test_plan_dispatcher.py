"""The plan dispatcher: every approved plan on the feed gets its deliberations, once."""

from __future__ import annotations

import asyncio
import json
from uuid import UUID

from aggregates import Deliberation, Plan, deliberation_id, plan_deliberation_task_id, plan_id_of
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.plans import PlanOptions, approve_plan, parse_plan_approval, request_deliberations
from application.stores import ApplicationDeliberationStore
from dispatchers.plans import PlanDispatcher
from tests.support.waiting import eventually
from tests.unit.application.test_plans import NOW, SEED_MESSAGE


async def dispatched(store: ApplicationDeliberationStore, plan_id: UUID) -> bool:
    return (await store.get_plan(plan_id)).dispatched


async def test_an_approved_plan_spawns_one_deliberation_per_role_once() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    approval = parse_plan_approval(json.dumps(SEED_MESSAGE).encode())
    async with PlanDispatcher(store, ApplicationEventFeed(app)) as pd:
        plan, created = await approve_plan(store, approval, now=NOW)
        again, created_again = await approve_plan(store, approval, now=NOW)  # redelivered
        assert created and not created_again and again.id == plan.id == plan_id_of("PL-7")
        await eventually(lambda: dispatched(store, plan.id))
    stored = await store.get_plan(plan.id)
    assert stored.requested_task_ids == ["plan:PL-7:DEV", "plan:PL-7:QA"]
    dev = await store.get(deliberation_id(plan_deliberation_task_id("PL-7", "DEV")))
    assert "POST /login" in dev.task and "Users log in" in dev.task and dev.role.value == "DEV"
    assert (dev.plan_id, dev.story_id, dev.requested_by) == ("PL-7", "US-42", "po@example.com")
    topics = [n.topic for n in app.recorder.select_notifications(1, 1000)]
    assert len([t for t in topics if t.endswith("Deliberation.Requested")]) == 2
    assert pd.plans_dispatched == 1

    # a restarted plan dispatcher finds nothing left to do
    async with PlanDispatcher(store, ApplicationEventFeed(app)) as pd2:
        await asyncio.sleep(0.1)
    assert pd2.plans_dispatched == 0


async def test_a_plan_approved_while_no_dispatcher_ran_is_dispatched_on_start() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    roles = ["ARCHITECT", "DEV", "QA"]
    app.save(Plan.approve(plan_id="P2", story_id="S", approved_at=NOW, roles=roles))
    async with PlanDispatcher(store, ApplicationEventFeed(app)):
        await eventually(lambda: dispatched(store, plan_id_of("P2")))
    ids = (await store.get_plan(plan_id_of("P2"))).requested_task_ids
    assert ids == ["plan:P2:ARCHITECT", "plan:P2:DEV", "plan:P2:QA"]
    d = await store.get(deliberation_id(ids[0]))
    assert isinstance(d, Deliberation) and d.status.value == "PENDING"


async def test_requesting_beside_a_running_dispatcher_records_each_deliberation_once() -> None:
    """ApprovePlan requests the deliberations itself (so its task ids can be read at once) while
    the plan dispatcher sees the same approval on the feed: both write, nothing is doubled."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    approval = parse_plan_approval(json.dumps(SEED_MESSAGE).encode())
    async with PlanDispatcher(store, ApplicationEventFeed(app)):
        plan, _ = await approve_plan(store, approval, now=NOW)
        first = await request_deliberations(store, plan.id, PlanOptions(num_agents=4), NOW)
        for task_id in plan.task_ids():  # readable as soon as the call returns
            assert (await store.get(deliberation_id(task_id))).num_agents == 4
        again = await request_deliberations(store, plan.id, PlanOptions(), NOW)
        await asyncio.sleep(0.1)  # the dispatcher's own pass over the approval
    topics = [n.topic for n in app.recorder.select_notifications(1, 1000)]
    assert len([t for t in topics if t.endswith("Deliberation.Requested")]) == 2
    assert len([t for t in topics if t.endswith("Plan.DeliberationsRequested")]) == 1
    assert first is True and again is False


async def test_a_plan_that_dispatched_nothing_is_not_tried_again_on_start() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    body = {k: v for k, v in SEED_MESSAGE.items() if k != "roles"}
    plan, _ = await approve_plan(store, parse_plan_approval(json.dumps(body).encode()), now=NOW)
    assert await request_deliberations(store, plan.id, PlanOptions(), NOW) is True
    async with PlanDispatcher(store, ApplicationEventFeed(app)) as pd:
        await asyncio.sleep(0.1)
    assert pd.plans_dispatched == 0
