"""A real Valkey client per test. The ``graph`` fixture (each test on LadybugDB and on Neo4j) is
``tests.fixtures.graphs``'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import valkey

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
