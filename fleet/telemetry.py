"""OpenTelemetry traces, optional and cheap: nothing is exported unless an endpoint is configured.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (and an OTLP exporter package installed, as in the
Docker image), ``configure_tracing`` installs a batching tracer provider. Without it the OTel API
is a no-op and a span costs a function call.

What is traced, each span carrying ``fleet.deliberation_id`` when it is about one:

* every API call: ``rpc <Method>`` (``fleet.grpc._errors.translated``), with ``fleet.task_id``;
* every event-store write: ``store <op>`` (``fleet.observed_store.ObservedStore``: create,
  update, update_in_order, create_plan, update_plan), whether from the API or the dispatcher;
* every agent call and assessment: ``agent run_turn`` (agent, round, model, tokens) and
  ``agent assess`` (``TracedAgentRuntime``, wrapped around the runtime the dispatcher is given).

One deliberation is one trace, across processes. The dispatcher reacts to events, not to the
call, so the call's context travels the way its request does: the Deliberate call's W3C
``traceparent`` is recorded in the ``Requested`` event (``trace_context``). Wherever the
deliberation is driven, the store wrapper learns it when it loads the deliberation
(``TraceContexts``), and the dispatcher's store writes and agent calls become children of the
call's span: rpc Deliberate → store update / agent run_turn / agent review / agent assess.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from agent_runtime.api import (
    AgentRuntime,
    AgentTurn,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)

log = logging.getLogger(__name__)

tracer = trace.get_tracer("fleet")


_PROPAGATOR = TraceContextTextMapPropagator()


@contextlib.contextmanager
def span(
    name: str, *, parent: str = "", **attributes: AttributeValue | None
) -> Iterator[trace.Span]:
    """A span named ``name`` with the non-empty ``attributes`` (no-op without a provider).

    Args:
        parent: a W3C ``traceparent`` to make the span a child of (e.g. the one recorded in a
            deliberation's ``Requested``); empty: the current context's span, if any.
    """
    if not tracing_on():  # the common case: no span, and none of its set-up either
        yield trace.INVALID_SPAN  # records nothing; set_attribute and the like are no-ops
        return
    attrs = {k: v for k, v in attributes.items() if v is not None and v != ""}
    context = _PROPAGATOR.extract({"traceparent": parent}) if parent else None
    with tracer.start_as_current_span(name, context=context, attributes=attrs) as s:
        yield s


def current_traceparent() -> str:
    """The current span's W3C ``traceparent``, or "" when there is none (tracing off)."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


class TraceContexts:
    """The trace each open deliberation belongs to, by deliberation id: an LRU of ``size``.

    Filled by the store wrapper whenever it sees a deliberation (``remember``), read by whoever
    works for that deliberation next (``of``). Thread-safe: cheap enough to share.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._by_id: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, deliberation_id: str, traceparent: str) -> None:
        """Record the deliberation's trace ("" too: known to have none)."""
        with self._lock:
            self._by_id[deliberation_id] = traceparent
            self._by_id.move_to_end(deliberation_id)
            while len(self._by_id) > self._size:
                self._by_id.popitem(last=False)

    def of(self, deliberation_id: str) -> str:
        with self._lock:
            return self._by_id.get(deliberation_id, "")

    def knows(self, deliberation_id: str) -> bool:
        with self._lock:
            return deliberation_id in self._by_id


def tracing_on() -> bool:
    """Whether spans are recorded (a provider is installed) rather than no-ops."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def configure_tracing(endpoint: str | None, service_name: str) -> Callable[[], None] | None:
    """Export spans to an OTLP endpoint. Returns a shutdown function, or None when off."""
    if not endpoint:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    exporter: SpanExporter
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


class TracedAgentRuntime(AgentRuntime):
    """An ``AgentRuntime`` that traces each call of the one it wraps (and changes nothing else),
    in the trace of the deliberation the call is for (``traces``)."""

    def __init__(self, inner: AgentRuntime, traces: TraceContexts | None = None) -> None:
        self._inner = inner
        self._traces = traces or TraceContexts()

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        about: dict[str, AttributeValue] = {
            "fleet.deliberation_id": turn.deliberation_id,
            "fleet.agent_id": turn.agent_id,
            "fleet.round": turn.round,
        }
        with span("agent run_turn", parent=self._traces.of(turn.deliberation_id), **about) as s:
            result = await self._inner.run_turn(turn)
            s.set_attribute("fleet.model", result.model)
            s.set_attribute("fleet.tokens", result.completion_tokens)
            return result

    async def review(self, request: ReviewInput) -> ReviewResult:
        with span(
            "agent review",
            parent=self._traces.of(request.deliberation_id),
            **{
                "fleet.deliberation_id": request.deliberation_id,
                "fleet.agent_id": request.agent_id,
                "fleet.purpose": request.purpose,
            },
        ):
            return await self._inner.review(request)

    def precheck(self, request: AssessmentInput) -> None:
        self._inner.precheck(request)

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        with span(
            "agent assess",
            parent=self._traces.of(request.deliberation_id),
            **{"fleet.deliberation_id": request.deliberation_id},
        ):
            return await self._inner.assess(request)

    async def close(self) -> None:
        await self._inner.close()
