"""The eventsourcing library's own conformance cases, run against a real private nats-server.

Each test gets a stream of its own: the cases expect notification ids 1, 2, 3 on an empty store,
and a JetStream purge does not reset sequences (our streams deny purge anyway).

Cases run, none overridden (only their abstract hooks are filled in): AggregateRecorderTestCase
(events, and snapshots), ApplicationRecorderTestCase with optional_test_insert_subscribe,
TrackingRecorderTestCase, ProcessRecorderTestCase, NonInterleavingNotificationIDsBaseCase (1000
events), InfrastructureFactoryTestCase, ExampleApplicationTestCase, ApplicationTestCase, and the
projection cases EventCountersViewTestCase, AggregateEventCountersProjectionTestCase and
EventSourcedProjectionTestCase. The counters view those need is a JetStream tracking recorder
whose counters are subjects of the same stream, written in one atomic batch with the tracking
record (see ``JetStreamEventCountersView``).

TaggedDecisionCountersProjectionTestCase runs too, with its view on JetStream, but its upstream
is a ``DCBApplication``: that needs a DCB recorder (``DCBInfrastructureFactory.dcb_recorder``:
events read by tag and type queries, an append conditional on "no event matching this query
after position N"), which this persistence module does not offer. JetStream can check one
subject filter per append (``Nats-Expected-Last-Subject-Sequence-Subject``), not a union of
tag sets across aggregates; Fleet's aggregates need per-aggregate consistency only. So the
upstream runs on the library's in-memory DCB store (``eventsourcing.dcb.popo``).
"""

from __future__ import annotations

import os
from typing import Any
from unittest import mock

import pytest
from eventsourcing.dcb.msgpack import MessagePackMapper
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    StoredEvent,
    Tracking,
    TrackingRecorder,
)
from eventsourcing.tests.application import ApplicationTestCase, ExampleApplicationTestCase
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    InfrastructureFactoryTestCase,
    NonInterleavingNotificationIDsBaseCase,
    ProcessRecorderTestCase,
    TrackingRecorderTestCase,
)
from eventsourcing.tests.projection import (
    AggregateEventCountersProjectionTestCase,
    EventCountersView,
    EventCountersViewTestCase,
    EventSourcedProjectionTestCase,
    TaggedDecisionCountersProjectionTestCase,
)
from eventsourcing.utils import Environment, get_topic

from eventstore._codec import encode, position
from eventstore._records import Write
from eventstore.jetstream import (
    JetStreamAggregateRecorder,
    JetStreamApplicationRecorder,
    JetStreamFactory,
    JetStreamProcessRecorder,
    JetStreamTrackingRecorder,
    _tracking_write,
)
from tests.fixtures.nats import session_nats_url, unique_stream_name

_ENV_KEYS = ("PERSISTENCE_MODULE", "NATS_URL", "NATS_STREAM")


class OsEnviron:
    """Mixin: PERSISTENCE_MODULE and a fresh stream in os.environ, as a user would configure."""

    def setUp(self) -> None:
        self._saved: dict[str, Any] = {k: os.environ.get(k) for k in _ENV_KEYS}
        os.environ["PERSISTENCE_MODULE"] = "eventstore.jetstream"
        os.environ["NATS_URL"] = session_nats_url()
        os.environ["NATS_STREAM"] = unique_stream_name("APP")
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class FreshStream:
    """Mixin: a factory on a new stream of the session's private server for each test."""

    factory: JetStreamFactory

    def setUp(self) -> None:
        self.factory = JetStreamFactory(
            {"NATS_URL": session_nats_url(), "NATS_STREAM": unique_stream_name("CONF")}
        )
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        self.factory.close()


class TestAggregateRecorder(FreshStream, AggregateRecorderTestCase):
    def create_recorder(self) -> AggregateRecorder:
        return self.factory.aggregate_recorder()


class TestSnapshotRecorder(FreshStream, AggregateRecorderTestCase):
    def create_recorder(self) -> AggregateRecorder:
        return self.factory.aggregate_recorder(purpose="snapshots")


class TestApplicationRecorder(FreshStream, ApplicationRecorderTestCase[ApplicationRecorder]):
    def create_recorder(self) -> ApplicationRecorder:
        return self.factory.application_recorder()

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


class TestApplicationRecorderConsumerReads(TestApplicationRecorder):
    """The same cases with every select_notifications page read through a pull consumer
    (by default only pages of 100 rows or more are: the cases use small pages)."""

    def create_recorder(self) -> ApplicationRecorder:
        self.factory.connection.log.reads.consumer_read_min = 1
        return self.factory.application_recorder()


class TestProcessRecorderConsumerReads(FreshStream, ProcessRecorderTestCase):
    def create_recorder(self) -> ProcessRecorder:
        self.factory.connection.log.reads.consumer_read_min = 1
        return self.factory.process_recorder()


class TestTrackingRecorder(FreshStream, TrackingRecorderTestCase):
    def create_recorder(self) -> TrackingRecorder:
        return self.factory.tracking_recorder()


class TestProcessRecorder(FreshStream, ProcessRecorderTestCase):
    def create_recorder(self) -> ProcessRecorder:
        return self.factory.process_recorder()


class TestNonInterleavingNotificationIDs(FreshStream, NonInterleavingNotificationIDsBaseCase):
    """Two threads each insert 1000 events (the atomic-batch maximum) at once."""

    def create_recorder(self) -> ApplicationRecorder:
        return self.factory.application_recorder()


class _TrackingRecorderSubclass(JetStreamTrackingRecorder):
    pass


class TestInfrastructureFactory(InfrastructureFactoryTestCase[JetStreamFactory]):
    def setUp(self) -> None:
        self.env = Environment("TestCase")
        self.env[InfrastructureFactory.PERSISTENCE_MODULE] = "eventstore.jetstream"
        self.env[JetStreamFactory.NATS_URL] = session_nats_url()
        self.env[JetStreamFactory.NATS_STREAM] = unique_stream_name("FACT")
        super().setUp()

    def expected_factory_class(self) -> type[JetStreamFactory]:
        return JetStreamFactory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return JetStreamAggregateRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return JetStreamApplicationRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return JetStreamTrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return _TrackingRecorderSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return JetStreamProcessRecorder


class TestExampleApplication(OsEnviron, ExampleApplicationTestCase):
    """BankAccounts with snapshots, configured only through os.environ, as a user would."""

    expected_factory_topic = "eventstore.jetstream:JetStreamFactory"


class TestApplication(OsEnviron, ApplicationTestCase):
    """The library's Application behaviour (cache fast-forwarding under 100 contending threads,
    notification ids 1..4 from save(), ...) on JetStream.

    Fleet's pytest config ignores DeprecationWarning; test_application_log counts one, so this
    class restores the default filter (the case itself is not changed).
    """

    pytestmark = pytest.mark.filterwarnings("always::DeprecationWarning")


class JetStreamEventCountersView(JetStreamTrackingRecorder, EventCountersView):
    """A counters read model on JetStream: each counter is a subject (``P.v.<name>``) whose last
    message's position is the count; an increment and its tracking record are one atomic batch,
    so a repeated tracking id changes no counter."""

    def _subject(self, name: str) -> str:
        return self.connection.subject("v", name)

    def _get(self, name: str) -> int:
        c = self.connection
        last = c.read(lambda: c.log.last_on_subject(self._subject(name)), f"counter {name}")
        return 0 if last is None else position(last.payload)

    def _incr(self, name: str, tracking: Tracking) -> None:
        c = self.connection
        count = self._get(name) + 1
        record = StoredEvent(originator_id=name, originator_version=count, topic="", state=b"")
        writes = [
            Write(self._subject(name), count, encode(record)),
            _tracking_write(c, tracking),
        ]
        c.call(c.log.append(writes, optimistic=lambda _: False), f"counter {name}")

    def get_created_event_counter(self) -> int:
        return self._get("created")

    def get_subsequent_event_counter(self) -> int:
        return self._get("subsequent")

    def incr_created_event_counter(self, tracking: Tracking) -> None:
        self._incr("created", tracking)

    def incr_subsequent_event_counter(self, tracking: Tracking) -> None:
        self._incr("subsequent", tracking)


class TestEventCountersView(FreshStream, EventCountersViewTestCase):
    def construct_event_counters_view(self) -> EventCountersView:
        return self.factory.tracking_recorder(JetStreamEventCountersView)


def _projection_env() -> dict[str, str]:
    """Each application and view on a stream of its own (upstream, downstream, view)."""
    return {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": session_nats_url(),
        "APPLICATION_NATS_STREAM": unique_stream_name("UP"),
        "COUNTERS_NATS_STREAM": unique_stream_name("DOWN"),
        "EVENTCOUNTERS_NATS_STREAM": unique_stream_name("VIEW"),
    }


class ClosesTheViewsFactory:
    """Mixin: close every store factory a case constructed. The library's ``ProjectionRunner``
    closes its application but never the factory of its view, so each case left a NATS
    connection open, which went on reconnecting (and logging so) once the shared server
    stopped at the end of the run."""

    def setUp(self) -> None:
        self._factories: list[JetStreamFactory] = []
        real = JetStreamFactory.__init__
        made = self._factories

        def remembering(factory: JetStreamFactory, env: Any) -> None:
            real(factory, env)
            made.append(factory)

        self._patch = mock.patch.object(JetStreamFactory, "__init__", remembering)
        self._patch.start()
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        try:
            super().tearDown()  # type: ignore[misc]
        finally:
            self._patch.stop()
            for factory in self._factories:
                factory.close()


class TestAggregateEventCountersProjection(
    ClosesTheViewsFactory, AggregateEventCountersProjectionTestCase
):
    view_class = JetStreamEventCountersView

    def setUp(self) -> None:
        self.env = _projection_env()  # type: ignore[misc]
        super().setUp()


class TestEventSourcedProjection(ClosesTheViewsFactory, EventSourcedProjectionTestCase):
    def setUp(self) -> None:
        self.env = _projection_env()  # type: ignore[misc]
        super().setUp()


class TestTaggedDecisionCountersProjection(
    ClosesTheViewsFactory, TaggedDecisionCountersProjectionTestCase
):
    """The DCB case: its upstream DCBApplication needs a DCB recorder (queries by tags and
    types, append conditional on a query), which this store does not offer, so the upstream
    runs on the library's in-memory DCB store; the counters view is on JetStream."""

    view_class = JetStreamEventCountersView

    def setUp(self) -> None:
        self.env = {  # type: ignore[misc]
            "MAPPER_TOPIC": get_topic(MessagePackMapper),
            "EVENTCOUNTERS_PERSISTENCE_MODULE": "eventstore.jetstream",
            "EVENTCOUNTERS_NATS_URL": session_nats_url(),
            "EVENTCOUNTERS_NATS_STREAM": unique_stream_name("DCBVIEW"),
        }
        super().setUp()


del AggregateRecorderTestCase
del ApplicationRecorderTestCase
del TrackingRecorderTestCase
del ProcessRecorderTestCase
del NonInterleavingNotificationIDsBaseCase
del InfrastructureFactoryTestCase
del ExampleApplicationTestCase
del ApplicationTestCase
del EventCountersViewTestCase
del AggregateEventCountersProjectionTestCase
del EventSourcedProjectionTestCase
del TaggedDecisionCountersProjectionTestCase
