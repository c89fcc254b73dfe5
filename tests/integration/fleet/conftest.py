"""Fixtures of the node tests (gRPC API, CLI): an in-memory span exporter behind Fleet's
tracer, certificates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.fleet._pki import Pki, make_pki


@pytest.fixture(scope="session")
def spans() -> Iterator[Any]:
    """Every finished span of the session (the OTel provider can be set once per process)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # fleet's tracer is a proxy: it picks this up
    yield exporter


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, server and client certificates, and an unrelated CA, in a temp dir."""
    return make_pki(tmp_path_factory.mktemp("pki"))
