"""The outbox on a real nats-server: every integration event lands once, in order, with no gap,
across restarts, rebuilds and SIGKILLs, and a plain nats-py consumer reads them.

Each test has a nats-server of its own: the outbox's stream holds ``orchestration.>``, which one
server lets only one stream hold.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats
import pytest
from nats.js.api import PubAck, StreamConfig

from application.app import FleetApplication
from eventstore._loop_thread import LoopThread
from fleet.embedded.nats import NatsServer
from projectors.outbox import SUBJECTS, AppHistory, OutboxProjection
from projectors.outbox.agent_responses import AGENT_RESPONSE_SUBJECTS
from projectors.outbox.jetstream import JetStreamOutboxStream, OutboxUnavailableError
from projectors.outbox.verify import verify_outbox
from projectors.runner import ProjectorRunner
from tests.support.outbox import MESSAGES_PER_ROUND, Received, one_of_each, read_all
from tests.support.schema_consumer import check, validators
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]

ORDER = [
    "orchestration.plan.approved",
    "orchestration.plan.skipped",
    "orchestration.plan.skipped",
    "orchestration.phase.changed",
    "orchestration.phase.changed",
    "orchestration.task.dispatched",
    "orchestration.deliberation.completed",
    "orchestration.task.completed",
    "orchestration.task.dispatched",
    "orchestration.task.failed",
    "orchestration.task.dispatched",
    "orchestration.task.failed",
    "orchestration.task.timed_out",
    "orchestration.task.dispatched",
    "orchestration.task.failed",
    "orchestration.task.cancelled",
    "orchestration.task.dispatched",
    "orchestration.task.failed",
]


def _runner(app: FleetApplication, url: str, bridge: LoopThread) -> ProjectorRunner:
    stream = JetStreamOutboxStream.open(url, bridge, source="FLEET_EVENTS")
    projection = OutboxProjection(stream, AppHistory(app))
    return ProjectorRunner(app, projection, owner="node", retry_on=(OutboxUnavailableError,))


async def _spawn(cmd: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *cmd, cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL
    )


def _assert_once_in_order(got: list[Received], head: int) -> None:
    keys = [r.body["idempotency_key"] for r in got]
    assert len(keys) == len(set(keys)), "an integration event was published twice"
    causes = [int(r.body["causation_id"]) for r in got]
    assert causes == sorted(causes), "integration events out of the log's order"
    assert max(causes) <= head


async def test_each_event_once_in_order_across_restart_and_rebuild(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    url = private_nats_server.url
    app.save(*one_of_each("a"))
    head = app.recorder.max_notification_id() or 0
    runner = _runner(app, url, bridge)
    runner.start()
    await asyncio.to_thread(runner.wait, head, 20)
    got = await read_all(url, at_least=MESSAGES_PER_ROUND)
    assert [r.subject for r in got] == ORDER
    _assert_once_in_order(got, head)
    completed = next(r.body for r in got if r.subject.endswith("deliberation.completed"))
    assert completed["event_type"] == "orchestration.deliberation.completed"
    assert completed["producer"] == "fleet-orchestrator"
    payload = completed["payload"]
    assert payload["task_id"] == "done-a" and payload["story_id"] == "s-a"
    assert payload["winner"] == payload["ranking"][0] == payload["decisions"][0]["agent_id"]
    assert payload["decisions"][0]["affected_subtask"] == "done-a"
    assert completed["correlation_id"] == payload["deliberation_id"]
    # The seed's flat readers find the same fields at the top level.
    assert (completed["story_id"], completed["task_id"]) == ("s-a", "done-a")
    assert completed["decisions"] == payload["decisions"]
    timed_out = next(r.body for r in got if r.subject.endswith("task.timed_out"))
    assert timed_out["payload"]["error_type"] == "timeout"

    # A restart, then a rebuild: nothing is published again; new events follow with no gap.
    runner.close()
    runner = _runner(app, url, bridge)
    runner.start()
    await asyncio.to_thread(runner.wait, head, 20)
    runner.close()
    runner.projection.reset()
    runner = runner.fresh()
    runner.start()
    app.save(*one_of_each("b"))
    head = app.recorder.max_notification_id() or 0
    await asyncio.to_thread(runner.wait, head, 20)
    runner.close()
    got = await read_all(url, at_least=2 * MESSAGES_PER_ROUND)
    assert [r.subject for r in got] == ORDER + ORDER
    assert [r.seq for r in got] == list(range(1, 2 * MESSAGES_PER_ROUND + 1))
    _assert_once_in_order(got, head)
    outbox = runner.projection
    assert isinstance(outbox, OutboxProjection)
    assert await asyncio.to_thread(verify_outbox, app, outbox) == []

    # verify notices a message published twice (here by hand, as a faulty publisher would).
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        raw = await js.get_msg("ORCHESTRATOR_EVENTS", 5)
        headers = {k: v for k, v in (raw.headers or {}).items() if not k.startswith("Nats-")}
        await js.publish(str(raw.subject), raw.data or b"", headers=headers)
    finally:
        await nc.close()
    problems = await asyncio.to_thread(verify_outbox, app, outbox)
    assert [p.detail for p in problems] == [
        f"{raw.subject} of event {headers['Fleet-Outbox-Position']} published 2 times",
        f"{raw.subject} at stream sequence {2 * MESSAGES_PER_ROUND + 1} is out of the log's order",
    ]


@pytest.mark.timeout(120)
async def test_sigkilled_outbox_leaves_each_event_once_in_order(
    app: FleetApplication, private_nats_server: NatsServer
) -> None:
    url = private_nats_server.url
    rounds = 15
    for k in range(rounds):
        app.save(*one_of_each(f"k{k}"))
    head = app.recorder.max_notification_id() or 0
    expected = rounds * MESSAGES_PER_ROUND
    cmd = [sys.executable, "-m", "tests.integration.projectors._outbox_child", url, "FLEET_EVENTS"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(7)
    at_kill: list[int] = []
    nc = await nats.connect(url)
    js = nc.jetstream()

    async def published() -> int:
        try:
            return int((await js.stream_info("ORCHESTRATOR_EVENTS")).state.messages)
        except Exception:  # not created yet: the child is still starting
            return 0

    async def published_at_least(n: int) -> bool:
        return await published() >= n

    try:
        for _ in range(4):
            # Batches of one event: a kill often lands between one event's messages.
            child = await _spawn([*cmd, "1"], env)
            before = await published()
            target = before + rng.randint(3, 25)
            await eventually(
                lambda t=target: published_at_least(t), timeout=60, what="outbox publishing"
            )
            child.send_signal(signal.SIGKILL)
            await child.wait()
            at_kill.append(await published())
        child = await _spawn(cmd, env)
        try:
            await eventually(
                lambda: published_at_least(expected), timeout=60, what="every message published"
            )
        finally:
            child.send_signal(signal.SIGKILL)
            await child.wait()
    finally:
        await nc.close()

    # Each kill came while the outbox was publishing (none after it had finished).
    assert len(at_kill) == 4 and max(at_kill) < expected, at_kill
    got = await read_all(url, at_least=expected)
    assert len(got) == expected
    assert [r.subject for r in got] == ORDER * rounds
    _assert_once_in_order(got, head)
    bridge = LoopThread(name="test-verify")
    try:
        stream = await asyncio.to_thread(
            JetStreamOutboxStream.open, url, bridge, source="FLEET_EVENTS"
        )
        outbox = OutboxProjection(stream, AppHistory(app))
        assert await asyncio.to_thread(verify_outbox, app, outbox) == []
    finally:
        bridge.close()


async def test_a_consumer_written_from_the_schemas_reads_every_event(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    known = validators()
    # A schema for every subject Fleet publishes on, and none for another.
    assert set(known) == set(SUBJECTS) | set(AGENT_RESPONSE_SUBJECTS)
    app.save(*one_of_each("schema"))
    runner = _runner(app, private_nats_server.url, bridge)
    with runner:
        await asyncio.to_thread(runner.wait, app.recorder.max_notification_id() or 0, 20)
    got = await read_all(private_nats_server.url, at_least=MESSAGES_PER_ROUND)
    assert {r.subject for r in got} == set(SUBJECTS)
    for r in got:
        check(r.subject, r.body, known)
    # The schemas say something: a body missing what Context reads is refused.
    completed = next(r for r in got if r.subject.endswith("deliberation.completed"))
    broken = {**completed.body, "payload": {**completed.body["payload"], "decisions": []}}
    with pytest.raises(AssertionError, match="decisions"):
        check(completed.subject, broken, known)


async def test_messages_dropped_by_the_streams_limits_are_not_published_again(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    """The seed's stream kept seven days: once Fleet's messages age out (here: a purge), a
    restart finds its position in the key-value mark and publishes only what is new."""
    url = private_nats_server.url
    app.save(*one_of_each("old"))
    runner = _runner(app, url, bridge)
    with runner:
        await asyncio.to_thread(runner.wait, app.recorder.max_notification_id() or 0, 20)
    nc = await nats.connect(url)
    try:
        await nc.jetstream().purge_stream("ORCHESTRATOR_EVENTS")
    finally:
        await nc.close()
    app.save(*one_of_each("new"))
    runner = _runner(app, url, bridge)
    with runner:
        await asyncio.to_thread(runner.wait, app.recorder.max_notification_id() or 0, 20)
    got = await read_all(url, at_least=MESSAGES_PER_ROUND)
    assert [r.subject for r in got] == ORDER
    assert {r.body["payload"].get("story_id") for r in got} <= {"s-new", ""}


@pytest.mark.timeout(120)
async def test_a_standby_takes_over_a_killed_owner_and_nothing_is_doubled(
    app: FleetApplication, private_nats_server: NatsServer
) -> None:
    """Two outbox processes, two owners: one publishes, the other stands by on the lease; the
    owner SIGKILLed mid-way, the standby finishes after the lease (3 s), each message once."""
    url = private_nats_server.url
    rounds = 10
    for k in range(rounds):
        app.save(*one_of_each(f"t{k}"))
    expected = rounds * MESSAGES_PER_ROUND
    cmd = [sys.executable, "-m", "tests.integration.projectors._outbox_child", url, "FLEET_EVENTS"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    nc = await nats.connect(url)
    js = nc.jetstream()
    children = {o: await _spawn([*cmd, "1", o], env) for o in ("a", "b")}
    try:

        async def published() -> int:
            try:
                return int((await js.stream_info("ORCHESTRATOR_EVENTS")).state.messages)
            except nats.js.errors.NotFoundError:
                return 0

        async def owner() -> str:
            kv = await js.key_value("FLEET_OUTBOX")
            return str(json.loads((await kv.get("lease.FLEET_EVENTS")).value or b"{}")["owner"])

        await eventually(
            lambda: _at_least(published, 20), timeout=60, what="the first owner publishing"
        )
        first = await owner()
        children[first].send_signal(signal.SIGKILL)
        await children[first].wait()
        assert await published() < expected, "the owner finished before the kill"
        await eventually(lambda: _at_least(published, expected), timeout=60, what="the rest")
        assert await owner() != first  # the standby took the lease over
    finally:
        for child in children.values():
            if child.returncode is None:
                child.send_signal(signal.SIGKILL)
                await child.wait()
        await nc.close()
    got = await read_all(url, at_least=expected)
    assert [r.subject for r in got] == ORDER * rounds
    _assert_once_in_order(got, app.recorder.max_notification_id() or 0)


async def _at_least(count: Callable[[], Awaitable[int]], n: int) -> bool:
    return await count() >= n


class ForeignSlipsIn(JetStreamOutboxStream):
    """Another publisher's message lands in the middle of the outbox's first window: sent on the
    same connection right behind the window's 2nd message, so the server stores it there."""

    sent = 0

    async def _send(
        self, subject: str, body: bytes, headers: dict[str, str]
    ) -> asyncio.Future[PubAck]:
        future = await super()._send(subject, body, headers)
        self.sent += 1
        if self.sent == 2:
            await self._nc.publish("orchestration.task.dispatched", b'{"event_type": "foreign"}')
        return future


async def test_a_window_refused_in_its_middle_leaves_no_gap_and_no_duplicate(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    """The foreign message takes the 3rd message's sequence: the 3rd is refused, and the 4th,
    which expects that very sequence, is refused too (it expects the 3rd's message id behind
    it), and so is the rest; the outbox re-reads the tail and goes on behind the foreign one."""
    url = private_nats_server.url
    app.save(*one_of_each("w"))
    head = app.recorder.max_notification_id() or 0
    stream = await asyncio.to_thread(ForeignSlipsIn.open, url, bridge, source="FLEET_EVENTS")
    assert isinstance(stream, ForeignSlipsIn)
    projection = OutboxProjection(stream, AppHistory(app))
    runner = ProjectorRunner(app, projection, owner="node", retry_on=(OutboxUnavailableError,))
    with runner:
        await asyncio.to_thread(runner.wait, head, 20)
    got = await read_all(url, at_least=MESSAGES_PER_ROUND + 1)
    assert [r.subject for r in got] == [*ORDER[:2], "orchestration.task.dispatched", *ORDER[2:]]
    assert [r.seq for r in got] == list(range(1, MESSAGES_PER_ROUND + 2))
    assert got[2].body == {"event_type": "foreign"}
    ours = [r for r in got if r.body.get("producer") == "fleet-orchestrator"]
    _assert_once_in_order(ours, head)
    # The window was refused after its 2nd message and the refused part sent again; never the
    # two that landed. (How many were refused depends on how the runner's first batch fell: all
    # of the round when it was read at once, fewer on a loaded machine.)
    assert MESSAGES_PER_ROUND < stream.sent <= 2 * MESSAGES_PER_ROUND - 2
    assert await asyncio.to_thread(verify_outbox, app, projection) == []


async def test_the_seed_systems_own_stream_is_used_as_it_is(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    """An ``ORCHESTRATOR_EVENTS`` the seed system made (seven days' retention, a message of its
    orchestrator in it) keeps its settings and its messages; Fleet's follow."""
    url = private_nats_server.url
    week = 7 * 24 * 3600.0
    nc = await nats.connect(url)
    js = nc.jetstream()
    try:
        config = StreamConfig(
            name="ORCHESTRATOR_EVENTS", subjects=["orchestration.>"], max_age=week
        )
        await js.add_stream(config)
        await js.publish("orchestration.task.dispatched", b'{"event_type": "seed"}')
        app.save(*one_of_each("seed"))
        runner = _runner(app, url, bridge)
        with runner:
            await asyncio.to_thread(runner.wait, app.recorder.max_notification_id() or 0, 20)
            await js.publish("orchestration.task.dispatched", b'{"event_type": "seed again"}')
            app.save(*one_of_each("after"))
            await asyncio.to_thread(runner.wait, app.recorder.max_notification_id() or 0, 20)
        info = await js.stream_info("ORCHESTRATOR_EVENTS")
    finally:
        await nc.close()
    assert info.config.max_age == week
    got = await read_all(url, at_least=2 * MESSAGES_PER_ROUND + 2)
    ours = [r for r in got if r.body.get("producer") == "fleet-orchestrator"]
    assert [r.subject for r in ours] == ORDER + ORDER
    assert [r.body["event_type"] for r in got if r not in ours] == ["seed", "seed again"]
