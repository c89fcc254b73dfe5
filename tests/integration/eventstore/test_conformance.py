"""The eventsourcing library's own conformance cases, run against a real private nats-server.

Each test gets a stream of its own: the cases expect notification ids 1, 2, 3 on an empty store,
and a JetStream purge does not reset sequences (our streams deny purge anyway).
"""

from __future__ import annotations

import os
from typing import Any

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    TrackingRecorder,
)
from eventsourcing.tests.application import ExampleApplicationTestCase
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    InfrastructureFactoryTestCase,
    NonInterleavingNotificationIDsBaseCase,
    ProcessRecorderTestCase,
    TrackingRecorderTestCase,
)
from eventsourcing.utils import Environment

from eventstore.jetstream import (
    JetStreamAggregateRecorder,
    JetStreamApplicationRecorder,
    JetStreamFactory,
    JetStreamProcessRecorder,
    JetStreamTrackingRecorder,
)
from tests.fixtures.nats import session_nats_url, unique_stream_name


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


class TestExampleApplication(ExampleApplicationTestCase):
    """BankAccounts with snapshots, configured only through os.environ, as a user would."""

    expected_factory_topic = "eventstore.jetstream:JetStreamFactory"
    _keys = ("PERSISTENCE_MODULE", "NATS_URL", "NATS_STREAM")

    def setUp(self) -> None:
        self._saved: dict[str, Any] = {k: os.environ.get(k) for k in self._keys}
        os.environ["PERSISTENCE_MODULE"] = "eventstore.jetstream"
        os.environ["NATS_URL"] = session_nats_url()
        os.environ["NATS_STREAM"] = unique_stream_name("APP")
        super().setUp()

    def tearDown(self) -> None:
        super().tearDown()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


del AggregateRecorderTestCase
del ApplicationRecorderTestCase
del TrackingRecorderTestCase
del ProcessRecorderTestCase
del NonInterleavingNotificationIDsBaseCase
del InfrastructureFactoryTestCase
del ExampleApplicationTestCase
