"""A real Valkey client per test, and the outbox tests' application on a nats-server of the
test's own with the loop thread their outbox stream runs on. The ``graph`` fixture (each test on
LadybugDB and on Neo4j) is ``tests.fixtures.graphs``'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import valkey

from application.app import FleetApplication
from eventstore._loop_thread import LoopThread
from fleet.embedded.nats import NatsServer
from fleet.embedded.valkey import ValkeyServer
from projectors.cache.valkey import ValkeyDeliberationBoard


@pytest.fixture
def valkey_client(valkey_server: ValkeyServer) -> Iterator[valkey.Valkey]:
    client = valkey.Valkey.from_url(valkey_server.url)
    yield client
    client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def board(valkey_client: valkey.Valkey, valkey_prefix: str) -> ValkeyDeliberationBoard:
    return ValkeyDeliberationBoard(valkey_client, key_prefix=valkey_prefix, cleanup_seconds=600)


@pytest.fixture
def app(private_nats_server: NatsServer) -> Iterator[FleetApplication]:
    a = FleetApplication(
        {
            "PERSISTENCE_MODULE": "eventstore.jetstream",
            "NATS_URL": private_nats_server.url,
            "NATS_STREAM": "FLEET_EVENTS",
        }
    )
    yield a
    a.close()


@pytest.fixture
def bridge() -> Iterator[LoopThread]:
    b = LoopThread(name="test-outbox-loop")
    yield b
    b.close()
