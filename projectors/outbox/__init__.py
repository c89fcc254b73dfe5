"""The integration-event outbox: Fleet's events published, once each and in order, as the seed
system's JSON on ``orchestration.>`` (``ORCHESTRATOR_EVENTS``).

``messages`` derives them (pure), ``projection`` publishes them through the ``port``'s stream,
whose JetStream adapter (``projectors.outbox.jetstream``) is imported from its own module.
"""

from projectors.outbox.messages import PRODUCER, SUBJECTS, IntegrationEvent, integration_events
from projectors.outbox.port import Mark, OutboxStream, Outgoing, PublishedMessage
from projectors.outbox.projection import AppHistory, OutboxProjection

__all__ = [
    "PRODUCER",
    "SUBJECTS",
    "AppHistory",
    "IntegrationEvent",
    "Mark",
    "OutboxProjection",
    "OutboxStream",
    "Outgoing",
    "PublishedMessage",
    "integration_events",
]
