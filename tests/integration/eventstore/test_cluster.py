"""The event store on a real three-node JetStream cluster (R3), as production runs it.

A replicated stream answers a direct get from any replica, and a replica may lag the leader; the
store reads what must be the latest write from the leader (``STREAM.MSG.GET``) and sends
``min_last_seq`` (its high-water mark) with every direct get, so a lagging replica cannot answer.
On loopback no replica lags long enough for a stale read to show, so the tests also watch the
requests on the wire (a plain subscriber sees every request) and check that each read after a
save is one that only an up-to-date replica or the leader may answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import nats
import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent
from nats.js import api

from eventstore.jetstream import JetStreamFactory
from fleet_testing.nats_cluster import ClusterNode, NatsCluster
from tests.support.aggregates import Ledger
from tests.support.jetstream import spy_publishes


class WireTap:
    """Records the read requests sent for one stream, from a connection of its own."""

    def __init__(self, url: str, stream: str) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._subjects = [f"$JS.API.DIRECT.GET.{stream}", f"$JS.API.STREAM.MSG.GET.{stream}"]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._nc = self._run(self._connect(url))

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _connect(self, url: str) -> Any:
        nc = await nats.connect(url)

        async def record(msg: Any) -> None:
            kind = "direct" if ".DIRECT." in msg.subject else "leader"
            self.requests.append((kind, json.loads(msg.data or b"{}")))

        for subject in self._subjects:
            await nc.subscribe(subject, cb=record)
        await nc.flush()
        return nc

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        """The requests seen since the last call (after the ones in flight have arrived)."""
        self._run(self._nc.flush())
        time.sleep(0.02)  # a request crosses a route before it reaches this node
        taken, self.requests = self.requests, []
        return taken

    def close(self) -> None:
        self._run(self._nc.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _info(url: str, stream: str) -> api.StreamInfo:
    async def info() -> api.StreamInfo:
        nc = await nats.connect(url)
        try:
            return await nc.jetstream()._jsm.stream_info(stream)
        finally:
            await nc.close()

    return asyncio.run(info())


def _env(url: str, stream: str, replicas: int) -> dict[str, str]:
    return {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": url,
        "NATS_STREAM": stream,
        "NATS_STREAM_REPLICAS": str(replicas),
        "NATS_TIMEOUT": "1",
    }


def _follower(cluster: NatsCluster, stream: str) -> ClusterNode:
    """A node that holds a replica of ``stream`` but does not lead it."""
    group = _info(cluster.url, stream).cluster
    assert group is not None and group.leader, "the store returned before a leader was elected"
    return next(n for n in cluster.nodes if n.name != group.leader)


def _save_then_load(
    app: Application[uuid.UUID], ledger: Ledger, n: int, tap: WireTap | None = None
) -> None:
    """Each save is followed at once by a load and a notification-id read: both see it, and
    (with ``tap``) every read request after the save is one no lagging replica may answer."""
    for _ in range(n):
        ledger.add(uuid.uuid4().hex)
        (recording,) = app.save(ledger)
        seq = recording.notification.id
        if tap is not None:
            tap.take()
        loaded: Ledger = app.repository.get(ledger.id)
        assert (loaded.version, loaded.tokens) == (ledger.version, ledger.tokens)
        assert app.recorder.max_notification_id() == seq
        if tap is not None:
            reads = tap.take()
            assert reads, "no read request seen"
            for kind, body in reads:
                assert kind == "leader" or body.get("min_last_seq", 0) >= seq, (kind, body)
            # "The last notification" is asked of the leader.
            assert any(kind == "leader" and "last_by_subj" in body for kind, body in reads)


@pytest.fixture
def r3_app(nats_cluster: NatsCluster) -> Iterator[tuple[Application[uuid.UUID], ClusterNode]]:
    """An application on an R3 stream, connected to a node that does not lead the stream."""
    JetStreamFactory(_env(nats_cluster.url, "R3", 3)).close()  # creates the stream
    follower = _follower(nats_cluster, "R3")
    app = Application[uuid.UUID](env=_env(follower.url, "R3", 3))
    try:
        yield app, follower
    finally:
        app.close()


@pytest.fixture
def tap(nats_cluster: NatsCluster) -> Iterator[WireTap]:
    t = WireTap(nats_cluster.url, "R3")
    yield t
    t.close()


@pytest.mark.timeout(30)
def test_an_r3_stream_has_three_replicas_and_reads_see_the_latest_write(
    nats_cluster: NatsCluster, r3_app: tuple[Application[uuid.UUID], ClusterNode], tap: WireTap
) -> None:
    app, _ = r3_app
    info = _info(nats_cluster.url, "R3")
    assert info.config.num_replicas == 3
    assert info.cluster is not None and len(info.cluster.replicas or []) == 2
    ledger = Ledger()
    app.save(ledger)
    _save_then_load(app, ledger, 30, tap)


@pytest.mark.timeout(30)
def test_saves_and_reads_go_on_when_a_follower_is_killed(
    nats_cluster: NatsCluster, r3_app: tuple[Application[uuid.UUID], ClusterNode]
) -> None:
    app, follower = r3_app
    ledger = Ledger()
    app.save(ledger)
    _save_then_load(app, ledger, 5)
    leader = _info(nats_cluster.url, "R3").cluster
    follower.kill()  # SIGKILL the node this client is connected to; the leader stays
    started = time.monotonic()
    _save_then_load(app, ledger, 20)
    assert time.monotonic() - started < 15
    survivor = next(n for n in nats_cluster.nodes if n.running())
    assert leader is not None and _info(survivor.url, "R3").cluster.leader == leader.leader
    fresh = Application[uuid.UUID](env=_env(survivor.url, "R3", 3))
    try:
        stored: Ledger = fresh.repository.get(ledger.id)
        assert stored.tokens == ledger.tokens and len(set(stored.tokens)) == 25
    finally:
        fresh.close()


@pytest.mark.timeout(30)
def test_replicas_are_raised_to_the_setting_and_never_lowered(
    nats_cluster: NatsCluster, tap: WireTap
) -> None:
    JetStreamFactory(_env(nats_cluster.url, "R3", 1)).close()
    assert _info(nats_cluster.url, "R3").config.num_replicas == 1
    JetStreamFactory(_env(nats_cluster.url, "R3", 3)).close()
    assert _info(nats_cluster.url, "R3").config.num_replicas == 3

    # A tool started without the setting (replicas 1) keeps the R3 stream as it is, and reads
    # as an R3 stream requires.
    follower = _follower(nats_cluster, "R3")
    app = Application[uuid.UUID](env=_env(follower.url, "R3", 1))
    try:
        assert _info(nats_cluster.url, "R3").config.num_replicas == 3
        ledger = Ledger()
        app.save(ledger)
        _save_then_load(app, ledger, 20, tap)
    finally:
        app.close()


@pytest.mark.timeout(60)
def test_one_aggregates_events_in_a_row_go_as_one_batch_and_survive_a_follower_restart(
    nats_cluster: NatsCluster,
) -> None:
    """On one node a chain of one-event saves is sent together, each conditional on the one
    before by message id. A replica checks that id again against one it holds only in memory,
    which a follower that caught up from a snapshot lacks: the chain would stop it. On R3 the
    chain is one atomic batch: no message-id condition goes out, and the chains keep landing,
    in order, on every replica, across a follower's SIGKILL and restart."""
    factory = JetStreamFactory(_env(nats_cluster.url, "R3", 3))
    try:
        recorder = factory.application_recorder()
        prefix = factory.connection.settings.prefix + "."
        sent = spy_publishes(factory, lambda s: s.startswith(prefix))
        ids = [uuid.uuid4() for _ in range(4)]
        versions = dict.fromkeys(ids, 0)

        def chains() -> None:
            units = []
            for oid in ids:
                for _ in range(3):
                    versions[oid] += 1
                    units.append([_stored(oid, versions[oid])])
            results = recorder.insert_events_each(units)
            assert all(isinstance(r, list) for r in results), results

        chains()
        follower = _follower(nats_cluster, "R3")
        follower.kill()
        chains()
        follower.start()
        for _ in range(5):
            chains()
        assert not [m for m in sent if "Nats-Expected-Last-Msg-Id" in m.headers]
        assert any("Nats-Batch-Commit" in m.headers for m in sent)
        for oid in ids:
            stored = [e.originator_version for e in recorder.select_events(oid)]
            assert stored == list(range(1, versions[oid] + 1))
        last = _info(nats_cluster.url, "R3").state.last_seq
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            group = _info(nats_cluster.url, "R3").cluster
            assert group is not None
            if all(r.current and not r.lag for r in group.replicas or []):
                break
            time.sleep(0.1)
        assert all(r.current and not r.lag for r in group.replicas or []), group.replicas
        assert _info(follower.url, "R3").state.last_seq == last
    finally:
        factory.close()


def _stored(oid: uuid.UUID, version: int) -> StoredEvent:
    return StoredEvent(originator_id=oid, originator_version=version, topic="t", state=b"x")
