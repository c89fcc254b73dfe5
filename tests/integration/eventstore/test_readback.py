"""Lost acknowledgements are resolved by reading back; undecodable messages are named, not fatal.

A lost acknowledgement is simulated by wrapping the connection's ``request``: the commit is sent
(or not), then the reply "times out". The recorder must answer success exactly once, or
IntegrityError when another writer won, never a silent duplicate or loss.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import (
    DataError,
    IntegrityError,
    OperationalError,
    StoredEvent,
    Tracking,
)
from nats.aio.client import Client as NatsClient
from nats.errors import TimeoutError as NatsTimeoutError

from eventstore._codec import decode
from eventstore.jetstream import JetStreamFactory, OutcomeUnknownError
from fleet.embedded.nats import NatsServer
from tests.support.aggregates import Counter
from tests.support.jetstream import append_garbage
from tests.support.waiting import eventually_sync


@pytest.fixture(params=["own", "crossing"])
def factory(
    nats_url: str, nats_stream: str, request: pytest.FixtureRequest
) -> Iterator[JetStreamFactory]:
    """Writes from this (lone) thread on a connection of its own, or crossing to the loop thread:
    both must resolve a lost acknowledgement the same way."""
    own = "yes" if request.param == "own" else "no"
    env = {"NATS_URL": nats_url, "NATS_STREAM": nats_stream, "NATS_TIMEOUT": "1"}
    f = JetStreamFactory({**env, "NATS_OWN_CONNECTIONS": own})
    yield f
    f.close()


def _event(oid: uuid.UUID, version: int) -> StoredEvent:
    return StoredEvent(
        originator_id=oid, originator_version=version, topic="t", state=uuid.uuid4().bytes
    )


def _lose_next_ack(
    factory: JetStreamFactory,
    monkeypatch: pytest.MonkeyPatch,
    *,
    before: Callable[[], Any] | None = None,
    land: bool = True,
) -> dict[str, int]:
    """The next write request to the stream's subjects gets no reply (after landing, or not),
    on whichever connection makes it (the loop thread's, or the writing thread's own)."""
    real = NatsClient.request
    prefix = factory.connection.settings.prefix + "."
    seen = {"lost": 0}

    async def request(
        nc: NatsClient, subject: str, payload: bytes = b"", timeout: float = 0.5, **kw: Any
    ) -> Any:
        if subject.startswith(prefix) and not seen["lost"]:
            seen["lost"] += 1
            if before is not None:
                await asyncio.to_thread(before)
            if land:
                await real(nc, subject, payload, timeout, **kw)
            raise NatsTimeoutError
        return await real(nc, subject, payload, timeout, **kw)

    monkeypatch.setattr(NatsClient, "request", request)
    return seen


def _versions(factory: JetStreamFactory, oid: uuid.UUID) -> list[int]:
    c = factory.connection
    rows = c.call(c.log.read(c.subject("e", oid)), "raw read")
    return [decode(r.payload)[1] for r in rows]


@pytest.mark.parametrize("land", [True, False], ids=["landed", "never-sent"])
def test_lost_ack_on_a_single_event_is_resolved(
    factory: JetStreamFactory, land: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = factory.application_recorder()
    oid = uuid.uuid4()
    recorder.insert_events([_event(oid, 1)])
    seen = _lose_next_ack(factory, monkeypatch, land=land)
    ids = recorder.insert_events([_event(oid, 2)])
    assert seen["lost"] == 1
    assert _versions(factory, oid) == [1, 2]  # stored exactly once
    assert ids == [recorder.max_notification_id()]


def test_lost_ack_on_an_atomic_batch_is_resolved(
    factory: JetStreamFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = factory.process_recorder()
    a, b = uuid.uuid4(), uuid.uuid4()
    _lose_next_ack(factory, monkeypatch, land=True)
    ids = recorder.insert_events(
        [_event(a, 1), _event(a, 2), _event(b, 1)], tracking=Tracking("up", 7)
    )
    assert ids == [1, 2, 3]
    assert (_versions(factory, a), _versions(factory, b)) == ([1, 2], [1])
    assert recorder.max_tracking_id("up") == 7
    assert recorder.max_notification_id() == 3


def test_lost_ack_when_another_writer_won_is_an_integrity_error(
    factory: JetStreamFactory, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = factory.application_recorder()
    oid = uuid.uuid4()
    recorder.insert_events([_event(oid, 1)])
    env = {"NATS_URL": nats_url, "NATS_STREAM": factory.connection.settings.stream}
    other = JetStreamFactory(env)
    try:
        theirs = _event(oid, 2)
        _lose_next_ack(
            factory,
            monkeypatch,
            before=lambda: other.application_recorder().insert_events([theirs]),
            land=True,  # ours is sent after theirs landed: the server refuses it
        )
        with pytest.raises(IntegrityError):
            recorder.insert_events([_event(oid, 2)])
        stored = recorder.select_events(oid)
        assert [e.originator_version for e in stored] == [1, 2]
        assert stored[1].state == theirs.state
    finally:
        other.close()


@pytest.mark.timeout(30)
def test_unreachable_for_the_whole_window_says_so(private_nats_server: NatsServer) -> None:
    env = {"NATS_URL": private_nats_server.url, "NATS_STREAM": "GONE", "NATS_TIMEOUT": "0.5"}
    f = JetStreamFactory(env)
    try:
        recorder = f.application_recorder()
        oid = uuid.uuid4()
        recorder.insert_events([_event(oid, 1)])
        private_nats_server.kill()
        # Once the client knows it is disconnected (not before: then the outcome is unknown), a
        # write is refused outright. Wait for that, bounded, rather than racing the socket close.
        nc = f.connection.log.nc
        eventually_sync(lambda: not nc.is_connected, interval=0.01, what="still connected")
        with pytest.raises(OperationalError, match=private_nats_server.url) as e:
            recorder.insert_events([_event(oid, 2)])
        # Refused while disconnected: certainly not written, and not "unknown".
        assert not isinstance(e.value, OutcomeUnknownError)
        assert "not written" in str(e.value)
        with pytest.raises(OperationalError, match=private_nats_server.url):
            recorder.select_events(oid)
    finally:
        f.close()


def test_reads_through_the_stream_leader(factory: JetStreamFactory) -> None:
    """With replicas > 1 "the last message" is asked of the leader; exercise that path on R1."""
    factory.connection.log.reads.leader_reads = True
    recorder = factory.process_recorder()
    oid = uuid.uuid4()
    assert recorder.max_notification_id() is None
    recorder.insert_events([_event(oid, 1), _event(oid, 2)], tracking=Tracking("up", 3))
    assert recorder.max_notification_id() == 2
    assert recorder.max_tracking_id("up") == 3
    assert [e.originator_version for e in recorder.select_events(oid, desc=True, limit=1)] == [2]


def test_an_undecodable_message_is_named_and_other_aggregates_still_load(
    nats_env: dict[str, str], nats_url: str, nats_stream: str
) -> None:
    app = Application[uuid.UUID](env=nats_env)
    try:
        good, bad = Counter(), Counter()
        good.increment()
        app.save(good, bad)
        subject = f"{nats_stream}.e.{bad.id}"

        seq = asyncio.run(append_garbage(nats_url, subject))
        good.increment()
        app.save(good)  # writers to other aggregates are unaffected

        assert app.repository.get(good.id).count == 2
        with pytest.raises(DataError, match=f"stream sequence {seq} on subject '{subject}'"):
            app.repository.get(bad.id)
        with pytest.raises(DataError, match=f"stream sequence {seq} on subject '{subject}'"):
            app.recorder.select_notifications(start=1, limit=10)
        # The notification log before the bad message reads normally.
        assert [n.id for n in app.recorder.select_notifications(1, 10, stop=seq - 1)] == [1, 2, 3]
    finally:
        app.close()
