"""Independent inserts (``insert_events_each`` / ``_async``): what the ledger's group commit uses.

Each batch is atomic on its own and succeeds or fails on its own; one-event batches are plain
conditional publishes (no atomic batch); batches of one aggregate land in order, and a later one
is not sent once an earlier one failed. Conflicts are IntegrityErrors and a lost acknowledgement
is resolved by reading back, never by writing twice. Real JetStream, no mocks of our code.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent

from eventstore._codec import decode, encode
from eventstore.jetstream import JetStreamApplicationRecorder, JetStreamFactory
from tests.integration.eventstore.test_readback import _lose_next_ack
from tests.support.jetstream import spy_publishes
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def recorder(factory: JetStreamFactory) -> JetStreamApplicationRecorder:
    r = factory.application_recorder()
    assert isinstance(r, JetStreamApplicationRecorder)
    return r


def _event(oid: uuid.UUID, version: int) -> StoredEvent:
    return StoredEvent(
        originator_id=oid, originator_version=version, topic="t", state=uuid.uuid4().bytes
    )


def _versions(factory: JetStreamFactory, oid: uuid.UUID) -> list[int]:
    c = factory.connection
    rows = c.call(c.log.read(c.subject("e", oid)), "raw read")
    return [decode(r.payload)[1] for r in rows]


def _count_batches(factory: JetStreamFactory) -> dict[str, int]:
    """Count what goes out: plain requests vs atomic-batch commits (by their headers)."""
    nc = factory.connection.log.nc
    real = nc.request
    seen = {"plain": 0, "batch": 0}

    async def request(subject: str, payload: bytes = b"", timeout: float = 0.5, **kw: Any) -> Any:
        headers = kw.get("headers") or {}
        if "Nats-Batch-Commit" in headers:
            seen["batch"] += 1
        elif subject.startswith(factory.connection.settings.prefix + "."):
            seen["plain"] += 1
        return await real(subject, payload, timeout, **kw)

    nc.request = request  # type: ignore[method-assign,assignment]
    return seen


def test_batches_land_independently(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    recorder.insert_events([_event(b, 1)])
    seen = _count_batches(factory)
    results = recorder.insert_events_each(
        [
            [_event(a, 1)],
            [_event(b, 1)],  # b's version 1 exists: this one conflicts, alone
            [_event(c, 1), _event(c, 2)],  # two events: one atomic batch
        ]
    )
    assert isinstance(results[1], IntegrityError)
    ids_a, ids_c = results[0], results[2]
    assert isinstance(ids_a, list) and isinstance(ids_c, list)
    assert len(ids_a) == 1 and len(ids_c) == 2 and ids_c[1] == ids_c[0] + 1  # contiguous
    assert (_versions(factory, a), _versions(factory, b), _versions(factory, c)) == (
        [1],
        [1],
        [1, 2],
    )
    # a's one event went as a plain conditional publish, c's two as one atomic batch; b's was
    # refused before sending (this writer knows version 1 is taken).
    assert seen == {"plain": 1, "batch": 1}


def test_batches_of_one_aggregate_land_in_order_and_stop_at_a_failure(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder, nats_url: str
) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    recorder.insert_events([_event(b, 1)])
    # Another process writes b's version 2: this recorder still believes b is at version 1, so
    # the server is what refuses the write below (expected last subject sequence).
    other = JetStreamFactory(
        {"NATS_URL": nats_url, "NATS_STREAM": factory.connection.settings.stream}
    )
    try:
        other.application_recorder().insert_events([_event(b, 2)])
    finally:
        other.close()
    results = recorder.insert_events_each(
        [
            [_event(a, 1)],
            [_event(b, 2)],  # conflicts ...
            [_event(a, 2)],
            [_event(b, 3)],  # ... so this one, decided on b's unstored state, is not sent
            [_event(a, 3)],
        ]
    )
    assert [isinstance(r, list) for r in results] == [True, False, True, False, True]
    assert isinstance(results[1], IntegrityError)
    assert isinstance(results[3], IntegrityError) and "not written" in str(results[3])
    assert _versions(factory, a) == [1, 2, 3]
    assert _versions(factory, b) == [1, 2]
    ids = [r[0] for r in results if isinstance(r, list)]
    assert ids == sorted(ids)  # a's three landed in their order


@pytest.mark.parametrize("land", [True, False], ids=["landed", "never-sent"])
def test_a_lost_ack_in_one_batch_is_resolved_without_a_duplicate(
    factory: JetStreamFactory,
    recorder: JetStreamApplicationRecorder,
    land: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    seen = _lose_next_ack(factory, monkeypatch, land=land)
    results = recorder.insert_events_each([[_event(a, 2)], [_event(b, 1)]])
    assert seen["lost"] == 1
    assert all(isinstance(r, list) for r in results)
    assert _versions(factory, a) == [1, 2]  # exactly once
    assert _versions(factory, b) == [1]


def test_a_failed_write_fails_its_batch_and_the_later_ones_of_its_aggregate_only(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    nc = factory.connection.log.nc
    real = nc.publish
    target = factory.connection.subject("e", a)

    async def publish(subject: str, payload: bytes = b"", **kw: Any) -> Any:
        if subject == target:
            raise OperationalError("refused for the test")  # as if nothing could be sent
        return await real(subject, payload, **kw)

    nc.publish = publish  # type: ignore[method-assign,assignment]
    results = recorder.insert_events_each([[_event(a, 1)], [_event(b, 1)], [_event(a, 2)]])
    nc.publish = real  # type: ignore[method-assign]
    assert isinstance(results[0], OperationalError)
    assert isinstance(results[1], list)
    assert isinstance(results[2], OperationalError) and "not written" in str(results[2])
    assert _versions(factory, a) == [] and _versions(factory, b) == [1]


def test_the_async_form_awaits_on_the_callers_loop(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    a = uuid.uuid4()

    async def main() -> list[Any]:
        ticks = 0

        async def ticker() -> None:  # the caller's loop keeps running while the write is out
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        try:
            first = await recorder.insert_events_each_async([[_event(a, 1)], [_event(a, 2)]])
            again = await recorder.insert_events_each_async([[_event(a, 2)]])
        finally:
            t.cancel()
        assert ticks > 0
        return [*first, *again]

    r1, r2, conflict = asyncio.run(main())
    assert isinstance(r1, list) and isinstance(r2, list)
    assert isinstance(conflict, IntegrityError)
    assert _versions(factory, a) == [1, 2]


# ---------------------------------------------------------------- the async crossing itself


def test_run_async_returns_raises_and_times_out() -> None:
    from eventstore._loop_thread import LoopThread

    lt = LoopThread(name="test-run-async")
    try:

        async def on_store_loop(x: int) -> tuple[int, bool]:
            return x * 2, lt.in_loop_thread()

        async def boom() -> None:
            raise IntegrityError("conflict")

        cancelled: list[bool] = []

        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        async def main() -> None:
            assert await lt.run_async(on_store_loop(21), timeout=5) == (42, True)
            with pytest.raises(IntegrityError):
                await lt.run_async(boom(), timeout=5)
            with pytest.raises(TimeoutError):
                await lt.run_async(forever(), timeout=0.1)
            # the operation is cancelled on its own loop
            await eventually(lambda: cancelled, timeout=1.0, what="never cancelled")
            assert cancelled == [True]

        asyncio.run(main())
    finally:
        lt.close()


def test_run_async_wakes_its_caller_when_the_loop_closes() -> None:
    from eventsourcing.persistence import ProgrammingError

    from eventstore._loop_thread import LoopThread

    lt = LoopThread(name="test-run-async-close")

    async def main() -> None:
        pending = asyncio.ensure_future(lt.run_async(asyncio.sleep(3600), timeout=30))
        await asyncio.sleep(0.05)
        await asyncio.to_thread(lt.close)
        with pytest.raises(ProgrammingError):
            await asyncio.wait_for(pending, 5)
        with pytest.raises(ProgrammingError):
            await lt.run_async(asyncio.sleep(0), timeout=1)

    asyncio.run(main())


# ---------------------------------------------------------------- chains: one subject, in a row


def test_one_aggregates_events_in_a_row_go_out_together(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    """Three one-event saves of one aggregate cost one round trip, not three: all three are
    sent before any reply comes back, each checked against the one before it."""
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    subject = factory.connection.subject("e", a)
    sent = spy_publishes(factory, lambda s: s == subject)
    results = recorder.insert_events_each([[_event(a, 2)], [_event(a, 3)], [_event(a, 4)]])
    assert all(isinstance(r, list) for r in results)
    ids = [r[0] for r in results if isinstance(r, list)]
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert _versions(factory, a) == [1, 2, 3, 4]
    assert len(sent) == 3
    assert len({m.taken_in for m in sent}) == 1  # no reply taken in while sending
    h1, h2, h3 = (m.headers for m in sent)
    assert "Nats-Expected-Last-Subject-Sequence" in h1
    assert h2["Nats-Expected-Last-Msg-Id"] == h1["Nats-Msg-Id"]
    assert h3["Nats-Expected-Last-Msg-Id"] == h2["Nats-Msg-Id"]


def test_a_write_landing_inside_a_chain_breaks_it_and_nothing_is_lost(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    """Another writer's event lands right after the chain's first: the rest are refused by
    the server (their predecessor is no longer the stream's last message) and written one by
    one after it, in order, each once."""
    a, b = uuid.uuid4(), uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    c = factory.connection
    nc = c.log.nc
    real = nc.publish
    target, other = c.subject("e", a), c.subject("e", b)
    foreign = _event(b, 1)
    injected: list[bool] = []

    async def publish(subj: str, payload: bytes = b"", **kw: Any) -> Any:
        await real(subj, payload, **kw)
        headers = kw.get("headers") or {}
        if subj == target and "Nats-Msg-Id" in headers and not injected:
            injected.append(True)
            await real(other, encode(foreign))  # lands between the chain's first and second

    nc.publish = publish  # type: ignore[method-assign,assignment]
    results = recorder.insert_events_each([[_event(a, 2)], [_event(a, 3)], [_event(a, 4)]])
    nc.publish = real  # type: ignore[method-assign]
    assert all(isinstance(r, list) for r in results), results
    assert _versions(factory, a) == [1, 2, 3, 4]
    assert _versions(factory, b) == [1]
    ids = [r[0] for r in results if isinstance(r, list)]
    b_row = c.call(c.log.read(other), "raw read")[0]
    assert ids[0] < b_row.seq < ids[1] < ids[2]


def test_a_conflict_at_the_head_of_a_chain_writes_none_of_it(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder, nats_url: str
) -> None:
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    theirs = _event(a, 2)
    other = JetStreamFactory(
        {"NATS_URL": nats_url, "NATS_STREAM": factory.connection.settings.stream}
    )
    try:
        other.application_recorder().insert_events([theirs])
    finally:
        other.close()
    results = recorder.insert_events_each([[_event(a, 2)], [_event(a, 3)]])
    assert isinstance(results[0], IntegrityError)
    assert isinstance(results[1], IntegrityError) and "not written" in str(results[1])
    c = factory.connection
    rows = c.call(c.log.read(c.subject("e", a)), "raw read")
    assert [decode(r.payload)[1] for r in rows] == [1, 2]
    assert rows[1].payload == encode(theirs)  # the other writer's version 2, untouched


@pytest.mark.parametrize("land", [True, False], ids=["landed", "never-sent"])
def test_a_lost_ack_inside_a_chain_is_resolved_without_a_duplicate(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder, land: bool
) -> None:
    """The second of three gets no reply, after landing or without being sent: it is resolved
    by reading back, and the third lands after it (at once, or written again): each once."""
    a = uuid.uuid4()
    recorder.insert_events([_event(a, 1)])
    nc = factory.connection.log.nc
    real = nc.publish
    target = factory.connection.subject("e", a)
    lost = {"n": 0}

    async def publish(subj: str, payload: bytes = b"", **kw: Any) -> Any:
        headers = kw.get("headers") or {}
        if subj == target and "Nats-Expected-Last-Msg-Id" in headers and not lost["n"]:
            lost["n"] += 1
            if land:
                await real(subj, payload, reply="_INBOX.nobody-listens", headers=headers)
            return None
        return await real(subj, payload, **kw)

    nc.publish = publish  # type: ignore[method-assign,assignment]
    results = recorder.insert_events_each([[_event(a, 2)], [_event(a, 3)], [_event(a, 4)]])
    nc.publish = real  # type: ignore[method-assign]
    assert lost["n"] == 1
    assert all(isinstance(r, list) for r in results), results
    assert _versions(factory, a) == [1, 2, 3, 4]  # exactly once each


def test_chains_and_atomic_batches_of_one_aggregate_land_in_their_order(
    factory: JetStreamFactory, recorder: JetStreamApplicationRecorder
) -> None:
    a = uuid.uuid4()
    results = recorder.insert_events_each(
        [
            [_event(a, 1)],
            [_event(a, 2)],
            [_event(a, 3), _event(a, 4)],
            [_event(a, 5)],
            [_event(a, 6)],
        ]
    )
    assert all(isinstance(r, list) for r in results), results
    ids = [i for r in results if isinstance(r, list) for i in r]
    assert ids == sorted(ids) and len(ids) == 6
    assert _versions(factory, a) == [1, 2, 3, 4, 5, 6]
