"""A plan approval whose recording fails in a way that may pass (the event store unavailable) is
redelivered with back-off a bounded number of times, then parked with its reason; meanwhile
the consumer keeps recording other plans.

Real nats-server (private to the test, so the PLANNING stream holds only this test's messages)
and the real event store; the one thing made to fail is recording one plan id, by a store that
raises the error an unreachable event store raises and passes everything else to the real one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import TypeVar
from uuid import UUID

import nats
import pytest
import pytest_asyncio
from eventsourcing.persistence import OperationalError
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError

from aggregates import Plan, plan_id_of
from application.app import FleetApplication
from application.errors import PlanNotFoundError
from application.ports import PlanStore
from application.stores import ApplicationDeliberationStore
from dispatchers.jetstream.plan_approvals import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    PLAN_STREAM,
    PLAN_SUBJECT,
    PlanApprovalConsumer,
)
from fleet.embedded.nats import NatsServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
MAX_DELIVER = 3


class StoreDownForOnePlan(PlanStore):
    """The PlanStore port: the real store, except that recording ``down_plan`` always fails as
    an unreachable event store does. Keeps when each attempt and each success happened."""

    def __init__(self, real: ApplicationDeliberationStore, down_plan: str) -> None:
        self.real = real
        self.down_id = plan_id_of(down_plan)
        self.failed_at: list[float] = []
        self.recorded_at: dict[str, float] = {}

    async def create_plan(self, plan: Plan) -> tuple[Plan, bool]:
        if plan.id == self.down_id:
            self.failed_at.append(time.monotonic())
            raise OperationalError("event store unavailable: nats://127.0.0.1 not reachable")
        stored = await self.real.create_plan(plan)
        self.recorded_at[plan.plan_id] = time.monotonic()
        return stored

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
        return await self.real.update_plan(plan_id, change)


@pytest_asyncio.fixture
async def store(private_nats_server: NatsServer) -> AsyncIterator[ApplicationDeliberationStore]:
    env = {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": private_nats_server.url,
        "NATS_STREAM": "PLANS_DLQ",
    }
    app = await asyncio.to_thread(FleetApplication, env)
    yield ApplicationDeliberationStore(app)
    app.close()


def approval(plan_id: str) -> bytes:
    body = {"plan_id": plan_id, "story_id": "US-7", "approved_by": "po", "roles": ["DEV"]}
    return json.dumps(body).encode()


async def consuming(js: JetStreamContext) -> bool:
    """The consumer has made its stream and durable (a message published now is delivered)."""
    try:
        await js.consumer_info(PLAN_STREAM, "fleet-plans")
    except NotFoundError:
        return False
    return True


async def test_a_transient_failure_is_retried_with_backoff_then_parked_while_others_flow(
    private_nats_server: NatsServer, store: ApplicationDeliberationStore
) -> None:
    down = StoreDownForOnePlan(store, "PL-DOWN")
    nc = await nats.connect(private_nats_server.url)
    js = nc.jetstream()
    async with PlanApprovalConsumer(nc, store=down, max_deliver=MAX_DELIVER) as consumer:
        await eventually(lambda: consuming(js), timeout=15.0)
        await js.publish(PLAN_SUBJECT, approval("PL-DOWN"))
        await js.publish(PLAN_SUBJECT, approval("PL-NEXT"))
        await eventually(lambda: len(down.failed_at) == MAX_DELIVER, timeout=15.0)
        await eventually(lambda: consumer.parked == 1, timeout=15.0)
        await js.publish(PLAN_SUBJECT, approval("PL-AFTER"))
        await eventually(lambda: consumer.accepted == 2, timeout=15.0)
        info = await js.consumer_info(PLAN_STREAM, "fleet-plans")
        assert not consumer.background_tasks()[0].done(), "the consumer must keep running"

    # Bounded: exactly max_deliver attempts, each after the nak's back-off (1 s, then 2 s).
    first, second, third = down.failed_at
    assert second - first >= 0.9 and third - second >= 1.8
    assert (info.num_ack_pending, info.num_pending) == (0, 0), "nothing left to redeliver"
    # Not blocked: the next plan was recorded at once, long before the failing one was parked.
    assert down.recorded_at["PL-NEXT"] < second
    assert set(down.recorded_at) == {"PL-NEXT", "PL-AFTER"}

    sub = await js.pull_subscribe(DEAD_LETTER_SUBJECT, stream=DEAD_LETTER_STREAM)
    (parked,) = await sub.fetch(10, timeout=2)
    headers = parked.headers or {}
    assert parked.data == approval("PL-DOWN")
    assert headers["Fleet-Dead-Letter-Reason"] == (
        f"gave up after {MAX_DELIVER} deliveries: "
        "event store unavailable: nats://127.0.0.1 not reachable"
    )
    assert headers["Fleet-Deliveries"] == str(MAX_DELIVER)
    assert headers["Fleet-Original-Subject"] == PLAN_SUBJECT
    with pytest.raises(PlanNotFoundError, match="not found"):
        await store.get_plan(plan_id_of("PL-DOWN"))
    await nc.close()
