"""``select_events(gt=N)`` reads what follows version N, not the whole aggregate: a load from a
snapshot fetches the events past it from the server (counted in messages received), with other
aggregates interleaved, from the writer (which knows the subject's last row) and from a fresh
reader (which does not). Every bound still returns exactly what a full read filtered would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import AggregateRecorder, StoredEvent

from eventstore.jetstream import JetStreamFactory
from tests.fixtures.nats import unique_stream_name

pytestmark = pytest.mark.timeout(60)

VERSIONS = 200
INTERLEAVED = 10


def _event(agg: UUID, version: int) -> StoredEvent:
    return StoredEvent(originator_id=agg, originator_version=version, topic="t", state=b"x" * 200)


@dataclass(frozen=True)
class Written:
    """Ten aggregates of 200 events on a stream of their own, and the store that wrote them."""

    stream: str
    writer: JetStreamFactory
    ids: list[UUID]


@pytest.fixture(scope="module")
def written(nats_url: str) -> Iterator[Written]:
    """Written once for the module (2,000 events, two seconds): the tests only read them. Each
    save is one version of all ten aggregates, so they interleave."""
    stream = unique_stream_name("RAP")
    writer = _store(nats_url, stream)
    ids = [uuid4() for _ in range(INTERLEAVED)]
    recorder = writer.aggregate_recorder()
    for v in range(1, VERSIONS + 1):
        recorder.insert_events([_event(agg, v) for agg in ids])
    yield Written(stream, writer, ids)
    writer.close()


@pytest.fixture
def aggregates(written: Written) -> list[UUID]:
    return written.ids


@pytest.fixture
def reader(nats_url: str, written: Written) -> Iterator[JetStreamFactory]:
    """Another process's store on the written stream: it knows nothing of the subjects."""
    f = _store(nats_url, written.stream)
    yield f
    f.close()


@pytest.fixture
def fresh_reader(nats_url: str, nats_stream: str) -> Iterator[JetStreamFactory]:
    """Another process's store on this test's stream: it has written nothing."""
    f = _store(nats_url, nats_stream)
    yield f
    f.close()


def _store(nats_url: str, stream: str) -> JetStreamFactory:
    return JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": stream, "NATS_TIMEOUT": "1"})


def _received(factory: JetStreamFactory) -> int:
    return int(factory.connection.log.nc.stats["in_msgs"])


@pytest.mark.parametrize("who", ["writer", "fresh reader"])
def test_a_read_after_version_150_fetches_the_50_events_past_it(
    written: Written, reader: JetStreamFactory, aggregates: list[UUID], who: str
) -> None:
    store = written.writer if who == "writer" else reader
    recorder = store.aggregate_recorder()
    agg = aggregates[3]
    before = _received(store)
    events = recorder.select_events(agg, gt=150)
    fetched = _received(store) - before
    assert [e.originator_version for e in events] == list(range(151, VERSIONS + 1))
    assert all(e.originator_id == agg for e in events)
    # 50 rows, an end-of-batch status and a few small direct gets to find where to start; the
    # whole aggregate would be 200 rows.
    assert 50 <= fetched <= 62, fetched


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"gt": 0}, list(range(1, 201))),
        ({"gt": 1}, list(range(2, 201))),
        ({"gt": 199}, [200]),
        ({"gt": 200}, []),
        ({"gt": 500}, []),
        ({"gt": 150, "lte": 160}, list(range(151, 161))),
        ({"gt": 150, "desc": True, "limit": 3}, [200, 199, 198]),
        ({"gt": 150, "lte": 151, "desc": True}, [151]),
        ({"gt": -5, "lte": 2}, [1, 2]),
    ],
)
def test_bounds_return_what_a_filtered_full_read_would(
    reader: JetStreamFactory,
    aggregates: list[UUID],
    bounds: dict[str, int],
    expected: list[int],
) -> None:
    recorder = reader.aggregate_recorder()
    agg = aggregates[-1]
    assert [e.originator_version for e in recorder.select_events(agg, **bounds)] == expected  # type: ignore[arg-type]
    # Again with the subject's last row known (the first read remembered it).
    assert [e.originator_version for e in recorder.select_events(agg, **bounds)] == expected  # type: ignore[arg-type]


def test_snapshot_versions_with_gaps_and_an_empty_subject(
    factory: JetStreamFactory, fresh_reader: JetStreamFactory
) -> None:
    agg = uuid4()
    snapshots: AggregateRecorder = factory.aggregate_recorder("snapshots")
    for v in (50, 100, 150):
        snapshots.insert_events([_event(agg, v)])
        factory.aggregate_recorder().insert_events([_event(uuid4(), 1)])  # interleaved
    for store in (factory, fresh_reader):
        recorder = store.aggregate_recorder("snapshots")
        assert [e.originator_version for e in recorder.select_events(agg, gt=60)] == [100, 150]
        assert [e.originator_version for e in recorder.select_events(agg, gt=149)] == [150]
        assert recorder.select_events(agg, gt=150) == []
        assert store.aggregate_recorder().select_events(uuid4(), gt=10) == []


def test_through_the_stream_leader(reader: JetStreamFactory, aggregates: list[UUID]) -> None:
    """A replicated stream's reads ask the leader (consistent), the steps back included."""
    reader.connection.log.reads.leader_reads = True  # as with replicas > 1
    recorder = reader.aggregate_recorder()
    for gt, expected in ((150, list(range(151, 201))), (199, [200]), (1, list(range(2, 201)))):
        found = recorder.select_events(aggregates[0], gt=gt)
        assert [e.originator_version for e in found] == expected
