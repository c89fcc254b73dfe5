"""OpenTelemetry traces, optional and cheap: nothing is exported unless an endpoint is configured.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (and an OTLP exporter package installed, as in the
Docker image), ``configure_tracing`` installs a batching tracer provider. Without it the OTel API
is a no-op and a span costs a function call.

What is traced, each span carrying ``fleet.deliberation_id`` when it is about one:

* every API call: ``rpc <Method>`` (``fleet.grpc._errors.translated``), with ``fleet.task_id``;
* every event-store write: ``store create`` / ``store update`` (``fleet.metrics.ObservedStore``),
  whether from the API or the dispatcher;
* every agent call and assessment: ``agent run_turn`` (agent, round, model, tokens) and
  ``agent assess`` (``TracedAgentRuntime``, wrapped around the runtime the dispatcher is given).

The API call and the dispatcher's work are separate traces joined by the deliberation id (the
dispatcher reacts to events, not to the call), which is the honest shape of an event-sourced flow.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import trace

log = logging.getLogger(__name__)

tracer = trace.get_tracer("fleet")


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span named ``name`` with the non-empty ``attributes`` (no-op without a provider)."""
    attrs = {k: v for k, v in attributes.items() if v not in (None, "")}
    with tracer.start_as_current_span(name, attributes=attrs) as s:
        yield s


def configure_tracing(endpoint: str | None, service_name: str) -> Callable[[], None] | None:
    """Export spans to an OTLP endpoint. Returns a shutdown function, or None when off."""
    if not endpoint:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter: Any
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint)
    except ImportError:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HttpExporter,
            )

            exporter = HttpExporter(endpoint=endpoint)
        except ImportError:
            log.warning(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set but no OTLP exporter is installed "
                "(pip install opentelemetry-exporter-otlp): tracing off"
            )
            return None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log.info("tracing to %s as %s", endpoint, service_name)
    return provider.shutdown


class TracedAgentRuntime:
    """An ``AgentRuntime`` that traces each call of the one it wraps (and changes nothing else)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def run_turn(self, turn: Any) -> Any:
        with span(
            "agent run_turn",
            **{
                "fleet.deliberation_id": turn.deliberation_id,
                "fleet.agent_id": turn.agent_id,
                "fleet.round": turn.round,
            },
        ) as s:
            result = await self._inner.run_turn(turn)
            s.set_attribute("fleet.model", str(getattr(result, "model", "")))
            s.set_attribute("fleet.tokens", int(getattr(result, "completion_tokens", 0) or 0))
            return result

    async def assess(self, request: Any) -> Any:
        with span("agent assess", **{"fleet.deliberation_id": request.deliberation_id}):
            return await self._inner.assess(request)

    async def close(self) -> None:
        await self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
