"""The event store of one test: a factory on the session's nats-server and a stream of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eventstore.jetstream import JetStreamFactory


@pytest.fixture
def factory(nats_url: str, nats_stream: str) -> Iterator[JetStreamFactory]:
    """One-second request timeouts, so that lost-acknowledgement paths resolve quickly."""
    f = JetStreamFactory({"NATS_URL": nats_url, "NATS_STREAM": nats_stream, "NATS_TIMEOUT": "1"})
    yield f
    f.close()
