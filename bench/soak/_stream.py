"""What the soak reads back from JetStream to judge the run: the event stream itself (through
the store's notification log, as every projection reads it) and the agent results stream of the
NATS backend (``<STREAM>_AGENT_RESULTS``: every answer a worker stored)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import nats
from eventsourcing.persistence import DatabaseError
from eventsourcing.utils import get_topic

# The results stream is read as the runtime reads it: through the backend's own codec, the one
# place its format is written down (a verifier, not a user, of the wire format).
from agent_runtime.nats_backend._wire import ResultMessage
from agent_runtime.nats_backend.runtime import QueueNames
from aggregates import Deliberation
from application.app import FleetApplication

_PAGE = 1000
TERMINAL = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)


@dataclass
class History:
    """One deliberation's events in stream order, with their stream positions."""

    positions: list[int] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        first = self.events[0] if self.events else None
        return str(first.task_id) if isinstance(first, Deliberation.Requested) else ""

    @property
    def terminal(self) -> Any | None:
        """The first terminal event, or None."""
        return next((e for e in self.events if isinstance(e, TERMINAL)), None)


Histories = Mapping[UUID, History]
"""Every deliberation's history, by deliberation id."""


class EventLog:
    """Every deliberation's events, read from the event stream from position 1 on.

    Sync (the store's recorder is): call ``extend`` from a worker thread. ``extend`` again reads
    only what was written since.
    """

    def __init__(self, nats_url: str, stream: str, replicas: int = 1) -> None:
        self.app = FleetApplication(
            env={
                "PERSISTENCE_MODULE": "eventstore.jetstream",
                "FLEET_NATS_URL": nats_url,
                "FLEET_NATS_STREAM": stream,
                "FLEET_NATS_STREAM_REPLICAS": str(replicas),
            }
        )
        self.read_to = 0
        self.histories: dict[UUID, History] = {}
        self._prefix = get_topic(Deliberation) + "."

    def extend(self) -> int:
        """Read what was written since the last call; return the stream position reached."""
        recorder: Any = self.app.recorder
        while True:
            page = self._page(recorder)
            if not page:
                return self.read_to
            for n in page:
                if n.topic.startswith(self._prefix):
                    history = self.histories.setdefault(UUID(str(n.originator_id)), History())
                    history.positions.append(n.id)
                    history.events.append(self.app.mapper.to_domain_event(n))
            self.read_to = page[-1].id

    def _page(self, recorder: Any) -> Any:
        """The next page; a read refused while a cluster node rejoins is asked again (30 s)."""
        give_up = time.monotonic() + 30.0
        while True:
            try:
                return recorder.select_notifications(self.read_to + 1, _PAGE)
            except DatabaseError:
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.5)

    def open_ids(self) -> list[UUID]:
        """Deliberations without a terminal event yet."""
        return [d for d, h in self.histories.items() if h.terminal is None]

    def close(self) -> None:
        self.app.close()


@dataclass(frozen=True)
class StoredAnswers:
    """The keys of every call a worker answered successfully and stored."""

    turns: frozenset[tuple[str, int, str]]
    """(deliberation id, round, agent id)."""
    reviews: frozenset[tuple[str, str, int, str]]
    """(deliberation id, purpose ``critique``/``rate``, round, agent id) of reviews."""
    messages: int


async def stored_answers(
    nats_urls: list[str], stream: str, timeout_s: float = 60.0
) -> StoredAnswers:
    """Read the agent results stream from its first message to its last."""
    names = QueueNames(stream)
    turns: set[tuple[str, int, str]] = set()
    reviews: set[tuple[str, str, int, str]] = set()
    nc = await nats.connect(nats_urls)
    count = 0
    try:
        js = nc.jetstream()
        try:
            last = (await js.stream_info(names.results_stream)).state.last_seq
        except nats.js.errors.NotFoundError:
            return StoredAnswers(frozenset(), frozenset(), 0)  # no call was ever answered
        sub = await js.subscribe(f"{names.results_prefix}.>", ordered_consumer=True)
        deadline = time.monotonic() + timeout_s
        seq = 0
        while seq < last and time.monotonic() < deadline:
            try:
                msg = await sub.next_msg(timeout=2.0)
            except nats.errors.TimeoutError:
                break
            seq = msg.metadata.sequence.stream
            count += 1
            result = ResultMessage.from_bytes(msg.data)
            if not result.ok:
                continue
            if result.kind == "turn":
                d_id, rnd, agent = result.key.split(":", 2)
                turns.add((d_id, int(rnd), agent))
            elif result.kind == "review":
                d_id, purpose, rnd, agent = result.key.split(":", 3)
                reviews.add((d_id, purpose, int(rnd), agent))
        await sub.unsubscribe()
    finally:
        await nc.close()
    return StoredAnswers(frozenset(turns), frozenset(reviews), count)
