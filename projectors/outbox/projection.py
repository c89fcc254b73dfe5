"""The outbox projection: the event log's integration events, published once each, in order.

For each event at position p the projection derives its integration events
(``projectors.outbox.messages``, deterministic) and publishes them in order, a batch's messages
as one window sent before any ack is awaited, each message expecting to land right behind the
one before it (``OutboxStream.publish_window``): a refused one, and every one after it, lands
not at all, so the stream holds a first part of the window, never one with a hole. The
position is the stream itself (``OutboxStream.tail``): the last message Fleet published names
the event it came from and how many that event has. So:

* a restart (or a process SIGKILLed between two publishes) resumes after the last message that
  landed, also within one event's messages: nothing is published twice, nothing skipped;
* a publish whose acknowledgement was lost is not retried blindly: the runner re-reads the tail
  and goes on from what is there (the ``Nats-Msg-Id`` dedupe window is a second guard, not the
  one this relies on, so a restart hours later still publishes nothing twice);
* two instances cannot interleave: the one whose view of the stream is stale is refused by the
  server (``PositionMovedError``) and re-reads, and the lease (``claim``) keeps a standby from
  trying while the owner lives;
* a rebuild deletes nothing (the messages are the consumers' now): it re-derives from the tail
  and publishes only what is not there yet.

Events that lead to no message (most of them) leave no trace on the stream; after a restart the
runner reads them again from the last published one, and again they lead to nothing.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from uuid import UUID

from eventsourcing.application import Application

from aggregates import Deliberation
from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence
from projectors.outbox.messages import (
    DISPATCH_TRIGGERS,
    Derive,
    History,
    handles,
    integration_events,
)
from projectors.outbox.port import Mark, OutboxStream, Outgoing

__all__ = ["WINDOW", "AppHistory", "OutboxProjection"]

WINDOW = 1000
"""A window is sent once it holds this many messages (a runner's batch of 500 events leads to
about 170 integration events: one window each). Bounds what is in flight and what a refusal
sends in vain."""

_DISPATCHED_KEPT = 100_000
_SEEN_KEPT = 10_000
"""Deliberations followed in memory at most (the oldest are then read from the store)."""
_TERMINAL = (
    Deliberation.Completed,
    Deliberation.Failed,
    Deliberation.TimedOut,
    Deliberation.Cancelled,
)


class AppHistory:
    """An aggregate's events up to a version, from the application's event store (a replay's
    read: the outbox never reads another projection)."""

    def __init__(self, app: Application[UUID]) -> None:
        self._app = app

    def __call__(self, originator_id: UUID, version: int) -> Sequence[object]:
        return list(self._app.events.get(originator_id, lte=version))


class OutboxProjection:
    """Publishes the integration events of the log on ``stream``. Called from the runner's
    thread only (one batch at a time).

    Args:
        stream: where integration events go (and the position is read back from).
        history: an aggregate's events up to a version (``AppHistory`` in Fleet).
        name: the projection's name in status and rebuild.
        derive: the messages of one event (the integration events by default; the agent
            results for the ``agent-responses`` outbox).
        handles: whether an event can lead to any (the rest are skipped unread).
    """

    def __init__(
        self,
        stream: OutboxStream,
        history: History,
        *,
        name: str = "outbox",
        derive: Derive = integration_events,
        handles: Callable[[object], bool] = handles,
    ) -> None:
        self.name = name
        self.stream = stream
        self.history = history
        self.derive = derive
        self.handles = handles
        self._mark: Mark | None = None
        self._seen: OrderedDict[UUID, list[object]] = OrderedDict()
        """The events of each deliberation whose request this instance handled, while it runs:
        its messages then need no history read (a read per decision costs most of a catch-up)."""
        self._dispatched: OrderedDict[UUID, None] = OrderedDict()
        """Deliberations whose dispatch this instance has handled: their later answers need no
        history read to find they dispatch nothing (most of a log's events are answers)."""
        self._handled = 0
        """The last position this instance handled (published, or found to lead to nothing)."""
        self.published = 0
        """Messages this instance published (for status and tests)."""
        self._held_until = 0.0
        """``time.monotonic()`` before which the lease this instance last renewed still holds
        with room to spare (a third of the lease after the renewal began): no claim is asked
        before then. 0: ask at the next batch."""

    def position(self) -> int:
        """The last position wholly published, read back from the stream (the one before a
        half-published event, which is then finished from where it stopped)."""
        mark = self.stream.tail()
        self._mark = mark
        self._held_until = 0.0  # after a refusal or a restart: the next batch asks again
        self._dispatched.clear()  # re-derived from the stream's view, like everything else
        self._seen.clear()
        self._handled = mark.position if mark.complete else max(0, mark.position - 1)
        return self._handled

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        return self.stream.claim(owner, lease_ms)

    def release(self, owner: str) -> None:
        self.stream.release(owner)

    def reset(self) -> None:
        """Forget this instance's view; nothing is deleted (see the module's docstring)."""
        self._mark = None
        self._handled = 0
        self._held_until = 0.0

    def _note(self, event: object) -> None:
        """Follow the deliberations requested while this instance runs (and forget finished
        ones: nothing follows a terminal event but a late answer, which leads to nothing)."""
        d_id = getattr(event, "originator_id", None)
        if not isinstance(d_id, UUID):
            return
        if isinstance(event, Deliberation.Requested):
            self._seen[d_id] = [event]
            if len(self._seen) > _SEEN_KEPT:
                self._seen.popitem(last=False)
        elif d_id in self._seen:
            self._seen[d_id].append(event)

    def _history_of(self, d_id: UUID, version: int) -> Sequence[object]:
        """``d_id``'s events up to ``version``: those followed here, else read from the store."""
        seen = self._seen.get(d_id)
        if seen and getattr(seen[-1], "originator_version", None) == version:
            if isinstance(seen[-1], _TERMINAL):
                del self._seen[d_id]
            return seen
        return self.history(d_id, version)

    def _dispatched_already(self, event: object) -> bool:
        """True for a dispatch trigger of a deliberation whose dispatch this instance has
        published or found published (such a trigger leads to nothing)."""
        return isinstance(event, DISPATCH_TRIGGERS) and event.originator_id in self._dispatched

    def _remember_dispatch(self, event: object) -> None:
        """Called once ``event``'s messages are all on the stream."""
        if isinstance(event, DISPATCH_TRIGGERS):
            self._dispatched[event.originator_id] = None
            if len(self._dispatched) > _DISPATCHED_KEPT:
                self._dispatched.popitem(last=False)

    def apply(self, event: object, position: int) -> bool:
        """Publish one event's messages unfenced (tools and tests); False when none are new."""
        self.position()
        if position <= self._handled:
            return False
        return self.apply_batch([(event, position)], base=self._handled) > 0

    def apply_batch(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> int:
        """Publish the messages of ``items`` past ``base``; returns how many events had some.

        Raises:
            PositionMovedError: ``base`` is not where this instance's view of the stream ends,
                or the stream moved under a publish (nothing more of the batch is published).
            OutboxUnavailableError: the stream cannot be reached.
        """
        mark = self._mark
        if mark is None or base != self._handled:
            stored = self.position()
            msg = f"outbox: batch based on {base}, stream says {stored}"
            raise PositionMovedError(msg, stored)
        if fence is not None:
            self._hold(fence)
        ours = 0
        kept = mark
        window: list[Outgoing] = []
        for event, position in items:
            if position <= base:
                continue
            self._note(event)
            if self.handles(event) and not self._dispatched_already(event):
                messages = self.derive(event, position, self._history_of)
                start = mark.index + 1 if position == mark.position else 0
                window += [
                    Outgoing(messages[i], position, i, len(messages))
                    for i in range(start, len(messages))
                ]
                if len(window) >= WINDOW:
                    mark = self._publish(window, mark)
                    window = []
                ours += 1 if messages else 0
                self._remember_dispatch(event)
            base = position
        if window:
            mark = self._publish(window, mark)
        self._handled = base
        if mark != kept:
            self.stream.keep(mark)
        return ours

    def _hold(self, fence: Fence) -> None:
        """Renew the lease, unless this instance renewed it less than a third of a lease ago.

        A renewed lease is this instance's for a whole lease (nobody else can claim it before
        it ends), so within a third of one no other instance can have taken over, and the
        publishes are still each conditional on the stream's last sequence. Asking once per
        batch instead cost two key-value round trips a batch on both outboxes (most batches
        publish nothing), about a fifth of a one-process node's interpreter under a burst.

        Raises:
            ProjectionFencedError: another instance holds the lease now.
        """
        now = time.monotonic()
        if now < self._held_until:
            return
        renewed = self.stream.claim(fence.owner, fence.lease_ms)
        if renewed is None or renewed.epoch != fence.epoch:
            self._held_until = 0.0
            msg = f"outbox: lease of epoch {fence.epoch} taken over"
            raise ProjectionFencedError(msg)
        self._held_until = now + fence.lease_ms / 3000

    def _publish(self, window: Sequence[Outgoing], mark: Mark) -> Mark:
        """Publish ``window`` behind ``mark``; the mark of its last message.

        On a refusal or an error the stream holds a first part of the window and this instance
        has nothing to go on: the runner calls ``position`` (which re-reads the tail, and forgets
        the dispatches and histories noted for the events of the window) and resumes there.
        """
        seq = self.stream.publish_window(window, expected=mark.stream_seq)
        last = window[-1]
        self._mark = Mark(seq, last.position, last.index, last.count)
        self.published += len(window)
        return self._mark
