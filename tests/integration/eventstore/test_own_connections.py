"""A thread writing alone writes on a NATS connection of its own (no crossing to the loop
thread); a thread running an event loop, or one writing while others are, crosses as before.
Either way the store keeps its promises: these run against a real nats-server, killed and
restarted behind an idle connection."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest

from eventstore.jetstream import JetStreamFactory
from fleet.embedded.nats import NatsServer
from tests.integration.eventstore.test_insert_each import _event, _versions
from tests.support.waiting import eventually_sync

pytestmark = pytest.mark.timeout(60)


def _own_connections(factory: JetStreamFactory) -> int:
    own = factory.connection._own
    assert own is not None
    return len(own._all)


def test_a_lone_writer_has_its_own_connection_and_an_event_loop_thread_crosses(
    factory: JetStreamFactory,
) -> None:
    recorder = factory.application_recorder()
    oid = uuid.uuid4()
    recorder.insert_events([_event(oid, 1)])
    recorder.insert_events([_event(oid, 2)])
    assert _own_connections(factory) == 1  # made once, used again

    async def inside_a_loop() -> None:  # it cannot run a loop of its own here: it crosses
        recorder.insert_events([_event(oid, 3)])

    asyncio.run(inside_a_loop())
    other = threading.Thread(target=lambda: recorder.insert_events([_event(oid, 4)]))
    other.start()
    other.join(10)
    assert _own_connections(factory) == 2  # the plain thread got one; the loop's caller not
    assert _versions(factory, oid) == [1, 2, 3, 4]


def test_an_idle_connection_is_remade_before_it_is_used(factory: JetStreamFactory) -> None:
    # Between writes a thread's loop does not run, so its connection answers no server pings:
    # the server would drop it as stale after a few idle minutes.
    recorder = factory.application_recorder()
    oid = uuid.uuid4()
    recorder.insert_events([_event(oid, 1)])
    own = factory.connection._own
    assert own is not None
    (mine,) = own._all
    first = mine.resource.nc
    own._max_idle_s = 0.0
    time.sleep(0.01)
    recorder.insert_events([_event(oid, 2)])
    assert first.is_closed and mine.resource.nc is not first
    assert _versions(factory, oid) == [1, 2]


def test_a_write_after_a_server_restart_behind_an_idle_connection_lands_once(
    private_nats_server: NatsServer,
) -> None:
    env = {"NATS_URL": private_nats_server.url, "NATS_STREAM": "OWN", "NATS_TIMEOUT": "1"}
    factory = JetStreamFactory(env)
    try:
        recorder = factory.application_recorder()
        oid = uuid.uuid4()
        recorder.insert_events([_event(oid, 1)])
        main = factory.connection.log.nc
        private_nats_server.kill()
        eventually_sync(lambda: not main.is_connected, interval=0.01, what="still connected")
        private_nats_server.start()
        eventually_sync(lambda: main.is_connected, interval=0.01, what="never reconnected")
        # This thread's own connection slept through all of that on a dead socket.
        recorder.insert_events([_event(oid, 2)])
        assert _versions(factory, oid) == [1, 2]
    finally:
        factory.close()


def test_close_releases_every_threads_connection(nats_url: str, nats_stream: str) -> None:
    factory = JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": nats_stream})
    recorder = factory.application_recorder()
    threads = [
        threading.Thread(target=recorder.insert_events, args=([_event(uuid.uuid4(), 1)],))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
        t.join(10)  # one at a time: each writes alone, on its own connection
    own = factory.connection._own
    assert own is not None
    made = [o.resource.nc for o in own._all]
    assert len(made) == 3
    factory.close()
    assert all(nc.is_closed for nc in made)


def test_closed_from_a_running_event_loop_it_still_releases_them(
    nats_url: str, nats_stream: str
) -> None:
    # An async application (fleet up) closes its store on its event loop, where no other loop
    # can run: the connections that worker threads made must be closed all the same.
    factory = JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": nats_stream})
    recorder = factory.application_recorder()

    async def main() -> list[Any]:
        await asyncio.to_thread(recorder.insert_events, [_event(uuid.uuid4(), 1)])
        own = factory.connection._own
        assert own is not None
        made = [o.resource.nc for o in own._all]
        factory.close()  # on this loop's thread
        return made

    made = asyncio.run(main())
    assert len(made) == 1 and made[0].is_closed
