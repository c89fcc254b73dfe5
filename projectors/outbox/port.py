"""The outbox's store: the stream it publishes on, which is also where its position lives.

The outbox's effect is the messages on the stream, so its position is read back from them: each
message Fleet publishes carries, in headers, the stream sequence of the Fleet event it came from
(its ``causation_id``), its index among that event's messages and their count. ``tail`` finds
the last one (and the stream's last sequence, which the next publish expects: a publish based
on a stale view of the stream is refused by the server, so two writers can never interleave or
double a message). Messages go in windows, sent without waiting for each acknowledgement, each
expecting the one before it (``publish_window``). The JetStream adapter is
``projectors.outbox.jetstream``; the tests' in-memory one is in
``tests/unit/projectors/test_outbox.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from projectors.fence import Fence
from projectors.outbox.messages import IntegrationEvent

__all__ = ["Mark", "OutboxStream", "Outgoing", "PublishedMessage"]


@dataclass(frozen=True)
class Mark:
    """Where Fleet's published messages end on the stream."""

    stream_seq: int
    """The stream's last sequence (anyone's message): what the next publish expects."""
    position: int
    """The Fleet event position (``causation_id``) of the last message Fleet published; 0: none."""
    index: int = 0
    """That message's index among the messages of its event."""
    count: int = 0
    """How many messages that event leads to (index + 1 < count: the event is half published)."""

    @property
    def complete(self) -> bool:
        return self.index + 1 >= self.count


@dataclass(frozen=True)
class Outgoing:
    """One message to publish: from the event at ``position``, ``index`` of its ``count``."""

    message: IntegrationEvent
    position: int
    index: int
    count: int


@dataclass(frozen=True)
class PublishedMessage:
    """One message Fleet published, as ``verify`` reads it back."""

    stream_seq: int
    subject: str
    idempotency_key: str
    position: int
    index: int


class OutboxStream(Protocol):
    """The stream integration events go to. Called from one thread (the runner's) at a time."""

    def tail(self) -> Mark:
        """The stream's last sequence and Fleet's last published message on it.

        Raises:
            OutboxUnavailableError: the stream cannot be read.
        """
        ...

    def publish_window(self, window: Sequence[Outgoing], *, expected: int) -> int:
        """Publish ``window`` in order, the first if the stream's last sequence is still
        ``expected``, each next one only right behind the one before it (nothing of anyone
        else's between them); returns the last one's sequence.

        Raises:
            PositionMovedError: the stream moved (another writer, or a message landed already):
                the messages before the refused one are on the stream, none after it.
            OutboxUnavailableError: the stream cannot be reached (some may have landed, always
                a first part of the window: re-read).
        """
        ...

    def keep(self, mark: Mark) -> None:
        """Keep ``mark`` (the last message published) beside the stream: the position should
        the stream's own limits drop Fleet's last messages. Called once per batch."""
        ...

    def published(self) -> Iterator[PublishedMessage]:
        """Every message Fleet published on the stream, oldest first."""
        ...

    def retained_from(self) -> int:
        """The stream's first sequence still held: above 1 when its limits (a maximum age, as
        ``AGENT_RESPONSES`` has) or an operator dropped older messages."""
        ...

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        """Become (or stay) the outbox's writer; None while another instance holds it."""
        ...

    def release(self, owner: str) -> None: ...
