"""Behaviour the conformance cases do not pin down: concurrency, atomicity, limits, crashes."""

from __future__ import annotations

import asyncio
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import (
    DataError,
    IntegrityError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    StoredEvent,
)
from nats.js import api

from eventstore._loop_thread import LoopThread
from eventstore.jetstream import (
    JetStreamApplicationRecorder,
    JetStreamFactory,
    JetStreamSubscription,
)
from fleet.embedded.nats import NatsServer
from tests.support.aggregates import Counter
from tests.support.jetstream import append_garbage, late_consumers
from tests.support.waiting import eventually_sync


@pytest.fixture
def factory(nats_url: str, nats_stream: str) -> Iterator[JetStreamFactory]:
    f = JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": nats_stream})
    yield f
    f.close()


def _event(oid: uuid.UUID | str, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(originator_id=oid, originator_version=version, topic=topic, state=b"{}")


def test_stream_is_set_up_as_the_architecture_says(factory: JetStreamFactory) -> None:
    async def info() -> api.StreamInfo:
        return await factory.connection.log.nc.jetstream()._jsm.stream_info(
            factory.connection.settings.stream
        )

    config = factory.connection.call(info(), "info").config
    assert config.storage == api.StorageType.FILE
    assert config.deny_delete and config.deny_purge
    assert config.allow_atomic and config.allow_direct
    assert config.num_replicas == 1
    assert (config.max_msgs, config.max_bytes) == (-1, -1)
    # Set-up is idempotent: a second factory on the same stream just verifies it.
    env = {"NATS_URL": factory.connection.settings.url, "NATS_STREAM": config.name or ""}
    JetStreamFactory(env).close()


def test_two_writers_same_version_one_integrity_error(nats_url: str, nats_stream: str) -> None:
    env = {"NATS_URL": nats_url, "NATS_STREAM": nats_stream}
    factories = [JetStreamFactory(env) for _ in range(2)]
    try:
        recorders = [f.application_recorder() for f in factories]
        oid = uuid.uuid4()
        recorders[0].insert_events([_event(oid, 1)])
        recorders[0].select_events(oid)  # both writers have now seen version 1
        recorders[1].select_events(oid)
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def write(recorder: JetStreamApplicationRecorder) -> None:
            barrier.wait()
            try:
                outcomes.append(recorder.insert_events([_event(oid, 2)]))
            except IntegrityError as e:
                outcomes.append(e)

        threads = [threading.Thread(target=write, args=(r,)) for r in recorders]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(isinstance(o, IntegrityError) for o in outcomes) == 1
        assert [e.originator_version for e in recorders[1].select_events(oid)] == [1, 2]
    finally:
        for f in factories:
            f.close()


def test_two_applications_saving_the_same_aggregate(nats_env: dict[str, str]) -> None:
    app1, app2 = Application[uuid.UUID](env=nats_env), Application[uuid.UUID](env=nats_env)
    try:
        counter = Counter()
        app1.save(counter)
        c1: Counter = app1.repository.get(counter.id)
        c2: Counter = app2.repository.get(counter.id)
        c1.increment()
        c2.increment()
        app1.save(c1)
        with pytest.raises(IntegrityError):
            app2.save(c2)
        assert app2.repository.get(counter.id).count == 1
    finally:
        app1.close()
        app2.close()


def test_multi_aggregate_save_is_atomic(nats_env: dict[str, str]) -> None:
    app = Application[uuid.UUID](env=nats_env)
    try:
        a, b = Counter(), Counter()
        app.save(b)
        stale_b: Counter = app.repository.get(b.id)
        b.increment()
        app.save(b)
        stale_b.increment()  # same version as the one just saved: a conflict
        a.increment()
        before = app.recorder.max_notification_id()
        with pytest.raises(IntegrityError):
            app.save(a, stale_b)
        assert app.recorder.max_notification_id() == before
        assert app.recorder.select_events(a.id) == []
        # Without a conflict, both aggregates land together, contiguous and in order (the
        # failed save consumed a's pending events, so use fresh aggregates).
        c, d = Counter(), Counter()
        d.increment()
        ids = [r.notification.id for r in app.save(c, d)]
        assert len(ids) == 3
        assert ids == list(range(ids[0], ids[0] + 3))
        assert app.repository.get(d.id).count == 1
    finally:
        app.close()


def test_duplicate_inside_one_call_and_batch_limit(factory: JetStreamFactory) -> None:
    recorder = factory.application_recorder()
    oid = uuid.uuid4()
    with pytest.raises(IntegrityError):
        recorder.insert_events([_event(oid, 1), _event(oid, 1)])
    with pytest.raises(ProgrammingError, match="1000"):
        recorder.insert_events([_event(oid, v) for v in range(1001)])
    assert recorder.max_notification_id() is None
    assert len(recorder.insert_events([_event(oid, v) for v in range(1000)]) or []) == 1000


def test_string_ids_with_subject_metacharacters(factory: JetStreamFactory) -> None:
    recorder = factory.application_recorder()
    ids = ["plain-id_1", "with.dots", "star*and>gt", "spaces and ünïcode", "~tilde"]
    for oid in ids:
        recorder.insert_events([_event(oid, 1), _event(oid, 2)])
    for oid in ids:
        events = recorder.select_events(oid)
        assert [(e.originator_id, e.originator_version) for e in events] == [(oid, 1), (oid, 2)]


def test_subscription_stops_from_another_thread(factory: JetStreamFactory) -> None:
    recorder = factory.application_recorder()
    recorder.insert_events([_event(uuid.uuid4(), 1)])
    with recorder.subscribe(gt=None) as subscription:
        assert next(subscription).id == 1
        threading.Timer(0.2, subscription.stop).start()
        assert list(subscription) == []  # blocked, then ended by stop()


def test_loop_thread_refuses_its_own_thread() -> None:
    loop = LoopThread()
    try:

        async def inner() -> None:
            async def nothing() -> None:
                return None

            loop.run(nothing(), timeout=1)

        with pytest.raises(ProgrammingError):
            loop.run(inner(), timeout=1)
    finally:
        loop.close()


@pytest.mark.timeout(60)
def test_sigkill_and_restart(private_nats_server: NatsServer) -> None:
    env = {"NATS_URL": private_nats_server.url, "NATS_STREAM": "CRASH", "NATS_TIMEOUT": "1"}
    factory = JetStreamFactory(env)
    try:
        recorder = factory.application_recorder()
        oid = uuid.uuid4()
        recorder.insert_events([_event(oid, 1), _event(oid, 2)])
        private_nats_server.kill()
        with pytest.raises(OperationalError, match=private_nats_server.url):
            recorder.insert_events([_event(oid, 3)])
        private_nats_server.start()
        # The same connection reconnects; nothing acknowledged was lost. A write made while
        # disconnected waits out the resolution window (4 request timeouts) for the server, then
        # is refused as "not written" and never lands later; a write whose acknowledgement is
        # lost is resolved by read-back (test_readback.py, test_crash.py).
        stored = eventually_sync(
            lambda: [e.originator_version for e in recorder.select_events(oid)],
            timeout=5.0,
            interval=0.05,
            ignoring=(OperationalError,),
        )
        assert stored in ([1, 2], [1, 2, 3])
        recorder.insert_events([_event(oid, len(stored) + 1)])
        assert [e.originator_version for e in recorder.select_events(oid)] == [
            *stored,
            len(stored) + 1,
        ]
    finally:
        factory.close()


@pytest.mark.skipif(shutil.which("nats-server") is None, reason="no system nats-server binary")
def test_refuses_a_server_older_than_2_12(tmp_path: Path) -> None:
    """A *private* instance of the system binary (Debian ships 2.9.10), never the one on :4222."""
    binary = Path(shutil.which("nats-server") or "")
    with NatsServer(tmp_path / "old", binary=binary) as old:
        try:
            JetStreamFactory({"NATS_URL": old.url, "NATS_STREAM": "OLD"}).close()
        except NotSupportedError as e:
            assert "2.12" in str(e)
        else:
            pytest.skip("the system nats-server is new enough")


def test_subscription_by_topic_skips_others_and_still_names_bad_messages(
    factory: JetStreamFactory, nats_url: str
) -> None:
    recorder = factory.application_recorder()
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1, "wanted"), _event(a, 2, "other"), _event(a, 3, "wanted")])
    subject = factory.connection.subject("e", a)

    with recorder.subscribe(gt=None, topics=["wanted"]) as subscription:
        assert [next(subscription).originator_version for _ in range(2)] == [1, 3]
        seq = asyncio.run(append_garbage(nats_url, subject))
        with pytest.raises(DataError, match=f"stream sequence {seq}"):
            next(subscription)


def test_a_subscription_read_in_batches_keeps_order_and_limit_and_ends_on_stop(
    factory: JetStreamFactory,
) -> None:
    """``take_batch`` (the projection runner reads this way): what is queued, in order, up to
    the limit; None when nothing comes in time; a stop from another thread wakes a waiting call,
    which then says the subscription ended."""
    recorder = factory.application_recorder()
    a = uuid.uuid4()
    recorder.insert_events([_event(a, v) for v in range(1, 8)])
    with recorder.subscribe(gt=2) as subscription:
        taken: list[int] = []

        def more() -> bool:
            got = subscription.take_batch(0.5, 3)
            assert got is not None and not got[1]
            assert 1 <= len(got[0]) <= 3
            taken.extend(n.id for n in got[0])
            return len(taken) == 5

        eventually_sync(more, timeout=10)
        assert taken == [3, 4, 5, 6, 7]
        assert subscription.take_batch(0.05, 3) is None  # nothing more: timed out
        threading.Timer(0.2, subscription.stop).start()
        assert subscription.take_batch(30, 3) == ([], True)  # woken by the stop, not the time
        assert subscription.take_batch(30, 3) == ([], True)  # and says so again at once


def test_a_subscription_reads_ahead_a_bounded_amount_and_loses_nothing_across_its_pauses(
    factory: JetStreamFactory,
) -> None:
    """A backlog is not pushed into memory whole: the subscription holds about ``read_ahead``
    rows, stops its consumer there and starts another after the last row it holds as the
    reader takes them. Every event comes once and in order, those saved during a pause too."""
    recorder = factory.application_recorder()
    assert isinstance(recorder, JetStreamApplicationRecorder)
    ids = [uuid.uuid4() for _ in range(20)]
    for v in range(1, 16):  # 300 events, 20 per message batch
        recorder.insert_events([_event(a, v) for a in ids])
    subscription = JetStreamSubscription(recorder, gt=0, read_ahead=40)
    with subscription:
        sizes: list[int] = []

        def settled() -> bool:
            sizes.append(subscription._queue.qsize())
            return len(sizes) > 5 and sizes[-1] == sizes[-6]

        eventually_sync(settled, timeout=10, interval=0.05)
        assert 40 <= sizes[-1] < 40 + 20, sizes  # the bound, not the backlog of 300
        recorder.insert_events([_event(a, 16) for a in ids])  # saved while it is paused
        taken: list[int] = []

        def all_taken() -> bool:
            got = subscription.take_batch(0.5, 7)
            taken.extend(n.id for n in (got or ([], False))[0])
            assert got is None or subscription._queue.qsize() < 40 + 20
            return len(taken) >= 320

        eventually_sync(all_taken, timeout=30)
        assert taken == list(range(1, 321))
        assert subscription.take_batch(0.2, 7) is None


def test_a_consumer_that_delivers_before_its_start_returns_is_still_stopped_at_the_bound(
    factory: JetStreamFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server pushes rows as soon as it has made the consumer, before the reply that
    ``subscribe`` returns on: a backlog can cross ``read_ahead`` while the consumer is still
    being made. That consumer is stopped once made, and the reader still gets every event
    once and in order."""
    recorder = factory.application_recorder()
    assert isinstance(recorder, JetStreamApplicationRecorder)
    ids = [uuid.uuid4() for _ in range(20)]
    for v in range(1, 16):  # 300 events
        recorder.insert_events([_event(a, v) for a in ids])
    consumers = late_consumers(monkeypatch)
    with JetStreamSubscription(recorder, gt=0, read_ahead=40) as subscription:
        taken: list[int] = []

        def all_taken() -> bool:
            before = len(taken)
            got = subscription.take_batch(0.5, 7)
            taken.extend(n.id for n in (got or ([], False))[0])
            assert subscription._queue.qsize() < 40 + 20
            assert len(consumers.running) <= 1, consumers.running  # never two consumers at once
            if before < 100 <= len(taken):  # a consumer left running would deliver these first
                recorder.insert_events([_event(a, 16) for a in ids])
            return len(taken) >= 320

        eventually_sync(all_taken, timeout=30)
        assert taken == list(range(1, 321))
        assert len(consumers.starts) > 2  # it did pause and resume, more than once


def test_a_bad_message_in_a_batch_comes_after_the_good_ones_before_it(
    factory: JetStreamFactory, nats_url: str
) -> None:
    recorder = factory.application_recorder()
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1), _event(a, 2)])
    subject = factory.connection.subject("e", a)

    seq = asyncio.run(append_garbage(nats_url, subject))
    with recorder.subscribe(gt=None) as subscription:
        good: list[int] = []

        def both_good() -> bool:
            got = subscription.take_batch(0.5, 100)
            good.extend(n.originator_version for n in (got or ([], False))[0])
            return len(good) == 2

        eventually_sync(both_good, timeout=10)
        assert good == [1, 2]
        with pytest.raises(DataError, match=f"stream sequence {seq}"):
            subscription.take_batch(5, 100)
