"""The event store's async face on a blocking recorder (``ThreadedRecorder``): what the group
commit and the event feed take on the in-memory application, matching what the JetStream
recorder does natively (``tests/integration/eventstore/test_loop_connections.py``)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder

from application.async_recorder import ThreadedRecorder, async_recorder
from application.ports import AsyncRecorder
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


def _event(oid: uuid.UUID, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(originator_id=oid, originator_version=version, topic=topic, state=b"{}")


def test_a_blocking_recorder_gets_the_threaded_face() -> None:
    face = async_recorder(POPOApplicationRecorder())
    assert isinstance(face, ThreadedRecorder) and isinstance(face, AsyncRecorder)


async def test_a_conflict_stops_the_aggregates_later_batches_only() -> None:
    face = ThreadedRecorder(POPOApplicationRecorder())
    a, b = uuid.uuid4(), uuid.uuid4()
    await face.insert_events_each_async([[_event(a, 1)]])
    results = await face.insert_events_each_async(
        [[_event(a, 1)], [_event(b, 1), _event(b, 2)], [_event(a, 2)]]
    )
    assert isinstance(results[0], IntegrityError)
    assert results[1] == [2, 3]  # the other aggregate's batch, whole
    assert isinstance(results[2], IntegrityError) and "earlier save" in str(results[2])


async def test_the_subscription_gives_history_then_live_events_narrowed_by_topic() -> None:
    face = ThreadedRecorder(POPOApplicationRecorder())
    a = uuid.uuid4()
    await face.insert_events_each_async([[_event(a, 1, "other")], [_event(a, 2, "wanted")]])
    notes = face.subscribe_async(gt=0, topics=["wanted"])
    try:
        first = await asyncio.wait_for(anext(notes), 10)
        await face.insert_events_each_async([[_event(a, 3, "other")], [_event(a, 4, "wanted")]])
        second = await asyncio.wait_for(anext(notes), 10)
    finally:
        await notes.aclose()
    assert (first.id, first.originator_version) == (2, 2)
    assert (second.id, second.originator_version) == (4, 4)


async def test_the_subscription_holds_a_bounded_amount_for_a_slow_reader() -> None:
    """The reading thread waits while ``read_ahead`` notifications wait: a follower behind a
    long stream holds part of it; it still gets every one, in order."""
    face = ThreadedRecorder(POPOApplicationRecorder())
    a = uuid.uuid4()
    await face.insert_events_each_async([[_event(a, v)] for v in range(1, 301)])
    notes = face.subscribe_async(gt=0, read_ahead=40)
    try:
        taken = [(await asyncio.wait_for(anext(notes), 10)).id]
        held = notes.ag_frame.f_locals["queue"]  # type: ignore[attr-defined]
        sizes: list[int] = []

        def settled() -> bool:
            sizes.append(held.qsize())
            return len(sizes) > 5 and sizes[-1] == sizes[-6]

        await eventually(settled, what="the queue never settled", interval=0.05)
        while len(taken) < 300:
            taken.append((await asyncio.wait_for(anext(notes), 10)).id)
    finally:
        await notes.aclose()
    assert sizes[-1] <= 40  # not the 299 left
    assert taken == list(range(1, 301))
