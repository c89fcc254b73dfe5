"""Real LadybugDB in a temporary directory and a real Valkey client, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import valkey

from fleet.embedded.valkey import ValkeyServer
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.graph.ladybug import LadybugGraph


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[LadybugGraph]:
    g = LadybugGraph(tmp_path / "graph" / "fleet.lbug")
    yield g
    g.close()


@pytest.fixture
def valkey_client(valkey_server: ValkeyServer) -> Iterator[valkey.Valkey]:
    client = valkey.Valkey.from_url(valkey_server.url)
    yield client
    client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def board(valkey_client: valkey.Valkey, valkey_prefix: str) -> ValkeyDeliberationBoard:
    return ValkeyDeliberationBoard(valkey_client, key_prefix=valkey_prefix, cleanup_seconds=600)
