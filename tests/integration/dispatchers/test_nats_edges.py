"""The NATS edges of dispatch on a real nats-server: the plan-approval consumer (with its dead
letters) and the work queue that shares deliberations among dispatcher processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import nats
import pytest
import pytest_asyncio
from nats.js.api import ConsumerConfig

from agent_runtime.api import AgentTurn
from aggregates import DeliberationStatus, Plan, plan_id_of
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from dispatchers.jetstream.plan_approvals import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    PLAN_SUBJECT,
    PlanApprovalConsumer,
)
from dispatchers.jetstream.work_queue import JetStreamClaim, JetStreamWorkQueue
from tests.support.deliberations import requested
from tests.support.doubles import FakeAgentRuntime
from tests.support.waiting import eventually, until_terminal

pytestmark = pytest.mark.timeout(60)


@pytest_asyncio.fixture
async def app(nats_env: dict[str, str]) -> AsyncIterator[FleetApplication]:
    a = await asyncio.to_thread(FleetApplication, nats_env)
    yield a
    a.close()


async def test_plan_approvals_are_recorded_once_and_bad_ones_parked(
    nats_url: str, app: FleetApplication
) -> None:
    store = ApplicationDeliberationStore(app)
    plan_id = f"PL-{uuid.uuid4().hex[:8]}"
    good = {
        "story_id": "US-1",
        "plan_id": plan_id,
        "approved_by": "po",
        "timestamp": 1767225600000,
        "ceremony_id": "c-9",
        "tasks_created": ["write the API"],
        "roles": ["DEV"],
    }
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    durable = f"plans-{uuid.uuid4().hex[:8]}"
    async with PlanApprovalConsumer(nc, store, durable=durable, max_deliver=3) as consumer:
        # the consumer creates the stream when none holds the subject, then its durable at the
        # stream's tail: what is published from then on is delivered
        await asyncio.wait_for(consumer.consuming.wait(), 10)
        assert await _has_stream(js, PLAN_SUBJECT) and consumer.skipped == 0
        await js.publish(PLAN_SUBJECT, b"{not json")
        await js.publish(PLAN_SUBJECT, json.dumps({"story_id": "s"}).encode())
        await js.publish(PLAN_SUBJECT, json.dumps(good).encode())
        await js.publish(PLAN_SUBJECT, json.dumps(good).encode())  # redelivered by Planning
        await eventually(lambda: consumer.accepted == 2 and consumer.parked == 2)
    plan = await store.get_plan(plan_id_of(plan_id))
    assert isinstance(plan, Plan) and plan.tasks == ["write the API"] and plan.version == 1
    assert plan.metadata["ceremony_id"] == "c-9"
    sub = await js.pull_subscribe(DEAD_LETTER_SUBJECT, stream=DEAD_LETTER_STREAM)
    parked = await sub.fetch(10, timeout=2)
    reasons = [m.headers["Fleet-Dead-Letter-Reason"] for m in parked if m.headers][-2:]
    assert "not JSON" in reasons[0] and "missing plan_id" in reasons[1]
    assert parked[-2].data == b"{not json"
    await nc.close()


async def _has_stream(js: object, subject: str) -> bool:
    try:
        await js.find_stream_name_by_subject(subject)  # type: ignore[attr-defined]
        return True
    except Exception:
        return False


async def test_the_work_queue_gives_each_deliberation_to_one_owner_and_hands_it_over(
    nats_url: str,
) -> None:
    stream = f"W_{uuid.uuid4().hex[:8].upper()}"
    a = await JetStreamWorkQueue.connect(nats_url, stream=stream, lease_s=1.0)
    b = await JetStreamWorkQueue.connect(nats_url, stream=stream, lease_s=1.0)
    d1, d2 = uuid.uuid4(), uuid.uuid4()
    for q in (a, b, a):  # every dispatcher offers what it sees: one notice each
        await q.offer(d1)
        await q.offer(d2)
    claims_a = a.claims()
    first = await asyncio.wait_for(anext(claims_a), 5)
    second = await asyncio.wait_for(anext(claims_a), 5)
    assert {first.deliberation_id, second.deliberation_id} == {d1, d2}
    await first.done()
    # A stops heart-beating for `second` (it "crashed"): after the lease, B gets it, and only it.
    claims_b = b.claims()
    handed = await asyncio.wait_for(anext(claims_b), 5)
    assert handed.deliberation_id == second.deliberation_id
    await handed.done()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(claims_b), 2.5)
    await claims_a.aclose()
    await claims_b.aclose()
    await a.close()
    await b.close()


async def test_a_notice_is_claimed_at_once_while_other_claims_are_heart_beaten(
    nats_url: str,
) -> None:
    """Each deliberation is claimed as soon as it is offered, not when the next one is.

    A dispatcher heart-beats the claims it holds (``keep``: JetStream's in-progress ack). With
    those acks in flight, nats-server 2.15 kept a 64-message pull request open after handing
    over the one notice there was, and nats-py's ``fetch`` waited for more: each notice then
    waited for the next to be offered (here 150 ms later; in the dispatch benchmark, every other
    deliberation of a burst started 85 ms late). Claims are fetched one at a time instead.
    """
    q = await JetStreamWorkQueue.connect(nats_url, stream=f"W_{uuid.uuid4().hex[:8].upper()}")
    offered: dict[uuid.UUID, float] = {}
    lags: list[float] = []
    loop = asyncio.get_running_loop()
    holders: set[asyncio.Task[None]] = set()

    async def hold(claim: JetStreamClaim) -> None:
        for _ in range(15):  # heart-beat it, as a dispatcher driving the deliberation does
            await asyncio.sleep(0.05)
            await claim.keep()
        await claim.done()

    async def take() -> None:
        async for claim in q.claims():
            lags.append(loop.time() - offered[claim.deliberation_id])
            task = asyncio.create_task(hold(claim))
            holders.add(task)
            task.add_done_callback(holders.discard)

    taker = asyncio.create_task(take())
    try:
        for _burst in range(2):
            for _ in range(8):
                d_id = uuid.uuid4()
                offered[d_id] = loop.time()
                await q.offer(d_id)
                await asyncio.sleep(0.15)
            await asyncio.sleep(1.2)  # idle: the held claims are heart-beaten, then done

        async def all_claimed() -> bool:
            return len(lags) == len(offered)

        await eventually(all_claimed, timeout=5.0)
    finally:
        taker.cancel()
        for task in [taker, *holders]:
            task.cancel()
        await asyncio.gather(taker, *holders, return_exceptions=True)
        await q.close()
    late = sorted(lag for lag in lags if lag > 0.1)
    assert not late, f"{len(late)} of {len(lags)} notices claimed late: {late}"


async def test_an_existing_work_queue_consumer_takes_the_configured_lease(nats_url: str) -> None:
    """``FLEET_WORK_LEASE`` reaches an installation whose consumer an earlier Fleet created (with
    ``pull_subscribe``, which keeps an existing consumer as it is, and a 10 s lease)."""
    stream = f"W_{uuid.uuid4().hex[:8].upper()}"
    old = await JetStreamWorkQueue.connect(nats_url, stream=stream)
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    try:
        await js.pull_subscribe(
            f"{old.subject_prefix}.*",
            durable="fleet-dispatchers",
            stream=stream,
            config=ConsumerConfig(ack_wait=10.0, max_deliver=-1, max_ack_pending=10_000),
        )
        q = await JetStreamWorkQueue.connect(nats_url, stream=stream, lease_s=2.5)
        d_id = uuid.uuid4()
        await q.offer(d_id)
        claims = q.claims()
        claim = await asyncio.wait_for(anext(claims), 5)
        assert claim.deliberation_id == d_id
        info = await js.consumer_info(stream, "fleet-dispatchers")
        assert info.config.ack_wait == 2.5
        await claim.done()
        await claims.aclose()
        await q.close()
    finally:
        await old.close()
        await nc.close()


async def test_notices_past_a_dispatchers_concurrency_go_to_another_dispatcher(
    nats_url: str, app: FleetApplication
) -> None:
    """Two dispatchers at ``concurrency=1`` on one work queue: each drives one deliberation,
    the third waits in the queue (PENDING), and every one completes once agents answer. Without
    the bound the first dispatcher to pull would hold every notice. A fourth, with a deadline
    that passes while it waits, is timed out at its deadline (both dispatchers watch it)."""
    store = ApplicationDeliberationStore(app)
    release = asyncio.Event()

    async def held(turn: AgentTurn) -> str:
        await release.wait()
        return f"answer from {turn.agent_id}"

    stream = f"W_{uuid.uuid4().hex[:8].upper()}"
    options = DispatcherOptions(concurrency=1)
    async with contextlib.AsyncExitStack() as stack:
        dispatchers = []
        for _ in range(2):
            q = await JetStreamWorkQueue.connect(nats_url, stream=stream, lease_s=3.0)
            stack.push_async_callback(q.close)
            rt = FakeAgentRuntime({f"dev-agent-{i}": held for i in (1, 2, 3)})
            dispatcher = DeliberationDispatcher(
                store, ApplicationEventFeed(app), rt, options=options, work_queue=q
            )
            dispatchers.append(await stack.enter_async_context(dispatcher))
        ids = []
        for i in range(3):
            d = requested(f"shared-{uuid.uuid4().hex[:6]}-{i}", task="do it", num_agents=3)
            await asyncio.to_thread(app.save, d)
            ids.append(d.id)
        await eventually(lambda: [x.active for x in dispatchers] == [1, 1])

        async def statuses() -> list[DeliberationStatus]:
            return [(await store.get(i)).status for i in ids]

        async def two_started() -> bool:
            return (await statuses()).count(DeliberationStatus.IN_PROGRESS) == 2

        await eventually(two_started, what="two deliberations started")
        assert (await statuses()).count(DeliberationStatus.PENDING) == 1
        short = requested(f"short-{uuid.uuid4().hex[:6]}", task="do it", timeout_seconds=2)
        await asyncio.to_thread(app.save, short)
        timed_out = await until_terminal(store, short.id, timeout=10)
        assert timed_out.status is DeliberationStatus.TIMEOUT
        assert [x.active for x in dispatchers] == [1, 1]  # the driven two go on
        release.set()
        done = [await until_terminal(store, i, timeout=20) for i in ids]
        assert {x.status for x in done} == {DeliberationStatus.COMPLETED}
