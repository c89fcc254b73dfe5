"""A coroutine's writes and subscriptions run on a NATS connection of its own loop's: no thread
hand-off between the caller and the server. The store's promises stay the same: these run
against a real nats-server, also killed and restarted under a live subscription."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from eventsourcing.persistence import DataError, IntegrityError, Notification, StoredEvent

from eventstore.jetstream import JetStreamApplicationRecorder, JetStreamFactory
from fleet.embedded.nats import NatsServer
from tests.integration.eventstore.test_insert_each import _versions
from tests.support.jetstream import late_consumers
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


def _event(oid: uuid.UUID, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(
        originator_id=oid, originator_version=version, topic=topic, state=uuid.uuid4().bytes
    )


def _loop_connections(factory: JetStreamFactory) -> list[Any]:
    loops = factory.connection._loops
    assert loops is not None
    return [log.nc for log in loops._made.values()]


def _recorder(factory: JetStreamFactory) -> JetStreamApplicationRecorder:
    recorder = factory.application_recorder()
    assert isinstance(recorder, JetStreamApplicationRecorder)
    return recorder


async def _take(notifications: AsyncIterator[Notification], n: int) -> list[Notification]:
    out = []
    async with asyncio.timeout(10):
        async for note in notifications:
            out.append(note)
            if len(out) == n:
                break
    return out


def test_each_loop_writes_on_its_own_connection_and_the_loop_thread_is_not_used(
    factory: JetStreamFactory,
) -> None:
    recorder = _recorder(factory)
    oid = uuid.uuid4()
    loop_thread_sends: list[str] = []
    main = factory.connection.log.nc
    original = main.request

    async def counting(subject: str, *args: Any, **kwargs: Any) -> Any:
        loop_thread_sends.append(subject)
        return await original(subject, *args, **kwargs)

    main.request = counting  # type: ignore[method-assign]

    async def write(version: int) -> None:
        (result,) = await recorder.insert_events_each_async([[_event(oid, version)]])
        assert not isinstance(result, Exception)

    async def twice() -> None:
        await write(1)
        await write(2)

    asyncio.run(twice())
    assert len(_loop_connections(factory)) == 1  # made once for that loop, used again
    other = threading.Thread(target=lambda: asyncio.run(write(3)))
    other.start()
    other.join(10)
    assert len(_loop_connections(factory)) <= 2  # the first loop is gone (weakly held)
    assert loop_thread_sends == []  # nothing crossed into the store's own loop thread
    assert _versions(factory, oid) == [1, 2, 3]


def test_a_conflict_on_the_loops_connection_is_an_integrity_error(
    factory: JetStreamFactory,
) -> None:
    recorder = _recorder(factory)
    oid = uuid.uuid4()
    recorder.insert_events([_event(oid, 1)])

    async def again() -> Any:
        (result,) = await recorder.insert_events_each_async([[_event(oid, 1)]])
        return result

    assert isinstance(asyncio.run(again()), IntegrityError)
    assert _versions(factory, oid) == [1]


def test_subscribe_async_gives_history_then_live_events_narrowed_by_topic(
    factory: JetStreamFactory,
) -> None:
    recorder = _recorder(factory)
    a = uuid.uuid4()
    ids = recorder.insert_events([_event(a, 1, "wanted"), _event(a, 2, "other")])
    assert ids is not None

    async def main() -> tuple[list[int], list[int]]:
        everything = recorder.subscribe_async(gt=ids[0] - 1)
        wanted = recorder.subscribe_async(gt=ids[0] - 1, topics=["wanted"])
        first = [n.originator_version for n in await _take(everything, 2)]
        assert [n.originator_version for n in await _take(wanted, 1)] == [1]
        # Live: written after the subscriptions caught up.
        await recorder.insert_events_each_async([[_event(a, 3, "other")], [_event(a, 4, "wanted")]])
        live = [n.originator_version for n in await _take(wanted, 1)]
        first += [n.originator_version for n in await _take(everything, 2)]
        await everything.aclose()
        await wanted.aclose()
        return first, live

    versions, live = asyncio.run(main())
    assert versions == [1, 2, 3, 4]
    assert live == [4]


def test_a_closed_async_subscription_stops_consuming(
    factory: JetStreamFactory, nats_url: str, nats_stream: str
) -> None:
    recorder = _recorder(factory)
    recorder.insert_events([_event(uuid.uuid4(), 1)])

    async def bound() -> int:
        """Consumers of the stream with a subscriber attached (the server drops an ephemeral
        one without interest after its inactivity threshold)."""
        nc = await nats.connect(nats_url)
        try:
            infos = await nc.jetstream().consumers_info(nats_stream)
            return sum(1 for i in infos if i.push_bound)
        finally:
            await nc.close()

    async def main() -> tuple[int, int, int]:
        before = await bound()
        notes = recorder.subscribe_async(gt=0)
        await _take(notes, 1)
        during = await bound()
        await notes.aclose()

        async def released() -> bool:
            return await bound() == before

        await eventually(released, what="the closed subscription's consumer is still bound")
        return before, during, await bound()

    before, during, after = asyncio.run(main())
    assert during == before + 1
    assert after == before


def test_subscribe_async_names_an_undecodable_message(
    factory: JetStreamFactory, nats_url: str
) -> None:
    recorder = _recorder(factory)
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    subject = factory.connection.subject("e", a)

    async def main() -> int:
        nc = await nats.connect(nats_url)
        try:
            seq = int((await nc.jetstream().publish(subject, b"\xff not an event")).seq)
        finally:
            await nc.close()
        notes = recorder.subscribe_async(gt=0)
        await _take(notes, 1)
        try:
            with pytest.raises(DataError, match=f"stream sequence {seq}.*{subject}"):
                await _take(notes, 1)
        finally:
            await notes.aclose()
        return seq

    asyncio.run(main())


def test_a_live_async_subscription_and_writes_survive_a_server_restart(
    private_nats_server: NatsServer,
) -> None:
    env = {"NATS_URL": private_nats_server.url, "NATS_STREAM": "LOOPS", "NATS_TIMEOUT": "1"}
    factory = JetStreamFactory(env)
    try:
        recorder = _recorder(factory)
        oid = uuid.uuid4()

        async def main() -> list[int]:
            notes = recorder.subscribe_async(gt=0)
            await recorder.insert_events_each_async([[_event(oid, 1)]])
            seen = [n.originator_version for n in await _take(notes, 1)]
            (own,) = _loop_connections(factory)
            private_nats_server.kill()
            await eventually(lambda: not own.is_connected)
            private_nats_server.start()
            await eventually(lambda: own.is_connected)
            (result,) = await recorder.insert_events_each_async([[_event(oid, 2)]])
            assert not isinstance(result, Exception), result
            seen += [n.originator_version for n in await _take(notes, 1)]
            await notes.aclose()
            return seen

        assert asyncio.run(main()) == [1, 2]
        assert _versions(factory, oid) == [1, 2]  # stored once each
    finally:
        factory.close()


def test_closed_from_its_own_loop_the_loops_connection_is_closed(
    nats_url: str, nats_stream: str
) -> None:
    # FleetNode closes the application (a sync call) on the same loop its dispatcher wrote from.
    factory = JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": nats_stream})
    recorder = _recorder(factory)

    async def main() -> Any:
        await recorder.insert_events_each_async([[_event(uuid.uuid4(), 1)]])
        (own,) = _loop_connections(factory)
        factory.close()
        await eventually(lambda: own.is_closed)
        return own

    assert asyncio.run(main()).is_closed


def test_a_cancellation_swallowed_while_subscribing_still_ends_the_reader(
    factory: JetStreamFactory,
) -> None:
    # On Python 3.11 nats-py's subscribe (a wait_for inside) can swallow a cancellation that
    # lands while it waits: the task stays "cancelling" but the call returns. The feed must end
    # then, not wait for events forever (a node's stop hung on it).
    recorder = _recorder(factory)

    async def main() -> bool:
        log = await factory.connection.loop_log()
        assert log is not None
        real = log.consume

        async def swallowing(*args: Any, **kwargs: Any) -> Any:
            stop = await real(*args, **kwargs)
            reader.cancel()  # reaches this call through the reader's await, as a stop does
            with contextlib.suppress(asyncio.CancelledError):  # swallowed, as wait_for can
                await asyncio.sleep(1)
            return stop

        log.consume = swallowing  # type: ignore[method-assign]
        notes = recorder.subscribe_async(gt=0)
        reader: asyncio.Future[Notification] = asyncio.ensure_future(anext(notes))
        await asyncio.wait({reader}, timeout=5)
        log.consume = real  # type: ignore[method-assign]
        return reader.done() and reader.cancelled()  # not still waiting for events

    assert asyncio.run(main())


@pytest.mark.parametrize("own", ["yes", "no"], ids=["own-connection", "loop-thread"])
def test_an_async_subscription_reads_ahead_a_bounded_amount_and_loses_nothing(
    nats_url: str, nats_stream: str, own: str
) -> None:
    """A follower that reads slowly (the dispatchers, the watch hub) holds about ``read_ahead``
    rows, not the whole backlog: past it the consumer stops, and a new one starts after the
    last row held once the reader has taken half. Every event comes once and in order, those
    saved during a pause too; with or without the loop's own connection."""
    factory = JetStreamFactory(
        {"NATS_URL": nats_url, "NATS_STREAM": nats_stream, "NATS_OWN_CONNECTIONS": own}
    )
    recorder = _recorder(factory)
    ids = [uuid.uuid4() for _ in range(20)]
    for v in range(1, 16):  # 300 events, 20 per message batch
        recorder.insert_events([_event(a, v) for a in ids])

    async def main() -> tuple[list[int], list[int]]:
        notes = recorder.subscribe_async(gt=0, read_ahead=40)
        taken = [(await anext(notes)).id]
        # The generator's own queue, seen from outside only here: what it holds is the figure.
        held = notes.ag_frame.f_locals["rows"]._rows  # type: ignore[attr-defined]
        sizes: list[int] = []

        def settled() -> bool:
            sizes.append(held.qsize())
            return len(sizes) > 5 and sizes[-1] == sizes[-6]

        await eventually(settled, what="the queue never settled", interval=0.05)
        await recorder.insert_events_each_async([[_event(a, 16) for a in ids]])  # while paused
        peak = 0
        async with asyncio.timeout(30):
            while len(taken) < 320:
                taken.append((await anext(notes)).id)
                peak = max(peak, held.qsize())
        await notes.aclose()
        return taken, [sizes[-1], peak]

    try:
        taken, (settled_at, peak) = asyncio.run(main())
    finally:
        factory.close()
    assert 40 - 1 <= settled_at < 40 + 20  # the bound (less the first, taken), not 300
    assert peak < 40 + 20
    assert taken == list(range(1, 321))


@pytest.mark.parametrize("own", ["yes", "no"], ids=["own-connection", "loop-thread"])
def test_a_consumer_that_delivers_before_its_start_returns_is_still_stopped_at_the_bound(
    nats_url: str, nats_stream: str, own: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server pushes rows as soon as it has made the consumer, before the reply that
    ``subscribe`` returns on: a backlog can cross ``read_ahead`` while the consumer is still
    being made. That consumer is stopped once made, not left running beside the next one
    (whose rows it then overtook: events were lost and the reader waited forever)."""
    factory = JetStreamFactory(
        {"NATS_URL": nats_url, "NATS_STREAM": nats_stream, "NATS_OWN_CONNECTIONS": own}
    )
    recorder = _recorder(factory)
    ids = [uuid.uuid4() for _ in range(20)]
    for v in range(1, 16):  # 300 events
        recorder.insert_events([_event(a, v) for a in ids])
    consumers = late_consumers(monkeypatch)

    async def main() -> list[int]:
        notes = recorder.subscribe_async(gt=0, read_ahead=40)
        taken: list[int] = []
        async with asyncio.timeout(30):
            while len(taken) < 320:
                taken.append((await anext(notes)).id)
                assert len(consumers.running) <= 1, consumers.running  # never two consumers at once
                if len(taken) == 100:  # a consumer left running would deliver these first
                    await recorder.insert_events_each_async([[_event(a, 16) for a in ids]])
        await notes.aclose()
        return taken

    try:
        taken = asyncio.run(main())
    finally:
        factory.close()
    assert taken == list(range(1, 321))
    assert len(consumers.starts) > 2  # it did pause and resume, more than once
