"""NATS plumbing every NATS user in Fleet shares: stream set-up with safety checks, pull loops,
dead letters, closing connections, request-reply services.

It sits at the bottom of the house (it imports ``nats`` and nothing of Fleet's), so the event
store, the dispatchers' JetStream adapters, the NATS agent backend and the consumers in ``fleet``
use one implementation of each hazard-prone piece instead of borrowing another part's private
module.
"""

from __future__ import annotations

from natsio.connection import close_connection
from natsio.deadletter import DEAD_LETTER_PREFIX, DEAD_LETTER_STREAM, dead_letter_stream_config
from natsio.errors import NatsPlumbingError
from natsio.pull import PullSubscription, pull_batches
from natsio.responder import Responder
from natsio.servers import servers
from natsio.streams import StreamSetupError, checked_replicas, ensure_stream

__all__ = [
    "DEAD_LETTER_PREFIX",
    "DEAD_LETTER_STREAM",
    "NatsPlumbingError",
    "PullSubscription",
    "Responder",
    "StreamSetupError",
    "checked_replicas",
    "close_connection",
    "dead_letter_stream_config",
    "ensure_stream",
    "pull_batches",
    "servers",
]
