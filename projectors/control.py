"""A node's projections as one thing to ask and to steer: status and lag, rebuild, verify.

``Projections`` owns the node's runners by name. ``status`` reports each one's position, the
stream head, and the lag in events and in seconds (recording time of the head event minus that of
the last event the runner handled, or of the event at its stored position before it handled one).
``rebuild`` stops a runner, deletes what its projection wrote (position back to 0, fencing state
kept) and starts a new runner of it from sequence 1: readers of the cache fall back to replays
meanwhile, Cypher readers see the graph refill. ``verify`` replays every deliberation and
compares (``projectors.verify``), and checks the outbox's messages against what the log leads to
(``projectors.outbox.verify``); a finished deliberation's cache entry must be there until the
board's ``expiry_seconds`` have passed (after that a miss is expected). It compares the stores the
node reads (``graph``, ``board``), whether or not it runs their projectors: an API replica on
Neo4j and a shared Valkey verifies what the projectors wrote; a node that reads no store refuses
(``NothingToVerifyError``) rather than report a clean comparison of nothing.

Thread-safety: every method may be called from any thread (the gRPC API calls them through
``asyncio.to_thread``); one lock serialises rebuilds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from eventsourcing.application import Application

from projectors.cache.board import DeliberationBoard
from projectors.cache.projection import CacheProjection
from projectors.errors import NothingToVerifyError, UnknownProjectionError
from projectors.graph.port import DecisionGraph
from projectors.graph.projection import GraphProjection
from projectors.outbox.projection import OutboxProjection
from projectors.outbox.verify import verify_outbox
from projectors.runner import ProjectorRunner
from projectors.verify import VerifyReport, story_differences, verify

__all__ = ["ProjectionStatus", "Projections"]


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    """The last position the runner handled (its store's position, or just past it)."""
    head: int
    lag_events: int
    """Events in the stream after ``position`` (notification ids: gaps count, a bound)."""
    lag_seconds: float
    state: str
    applied: int
    """Events this node's runner applied since it started."""
    error: str = ""


class Projections:
    """The runners of one node, by projection name, and the stores it reads.

    ``graph`` and ``board``: the stores to verify when no runner here projects into them (an
    API replica reading the shared ones); a runner's own store is found through the runner.
    """

    def __init__(
        self,
        app: Application[UUID],
        runners: MutableSequence[ProjectorRunner],
        *,
        graph: DecisionGraph | None = None,
        board: DeliberationBoard | None = None,
    ) -> None:
        self._app = app
        self._runners = runners
        self._graph = graph
        self._board = board
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return [r.name for r in self._runners]

    def runner(self, name: str) -> ProjectorRunner:
        for r in self._runners:
            if r.name == name:
                return r
        have = ", ".join(self.names) or "none"
        msg = f"name: no projection {name!r} on the node that runs them (have: {have})"
        raise UnknownProjectionError(msg)

    def head(self) -> int:
        return self._app.recorder.max_notification_id() or 0

    def status(self) -> tuple[int, list[ProjectionStatus]]:
        """The stream head and each projection's status."""
        head = self.head()
        head_time = self._time_at(head)
        out = []
        for r in list(self._runners):
            position = r.position()
            lag = max(0, head - position)
            seconds = 0.0
            if lag and head_time is not None:
                # A runner that has applied nothing itself (restarted, its first batch failing)
                # is as far behind as the event at the position its store holds.
                last = r.last_event_time or self._time_at(position)
                seconds = max(0.0, (head_time - last).total_seconds()) if last else float("nan")
            error = repr(r.error) if r.error is not None else ""
            out.append(
                ProjectionStatus(r.name, position, head, lag, seconds, r.state, r.applied, error)
            )
        return head, out

    def rebuild(self, name: str) -> int:
        """Rebuild projection ``name`` from sequence 1; returns the head it will catch up to."""
        with self._lock:
            old = self.runner(name)
            old.close()
            old.projection.reset()
            new = old.fresh()
            self._runners[self._runners.index(old)] = new
            new.start()
            return self.head()

    def verify(self, on_progress: Callable[[int, int], None] | None = None) -> VerifyReport:
        """Replay every deliberation and compare the graph and the cache this node reads.

        Raises:
            NothingToVerifyError: this node reads neither a graph nor a cache.
        """
        graph, board = self._graph, self._board
        outboxes: list[OutboxProjection] = []
        for r in self._runners:
            p = r.projection
            if isinstance(p, GraphProjection):
                graph = p.graph
            elif isinstance(p, CacheProjection):
                board = p.board
            elif isinstance(p, OutboxProjection):
                outboxes.append(p)
        if graph is None and board is None and not outboxes:
            msg = "nothing to verify: this node reads neither a graph nor a cache"
            raise NothingToVerifyError(msg)
        expiry = board.expiry_seconds if board is not None else None
        report = verify(
            self._app, graph=graph, board=board, cache_expiry_s=expiry, on_progress=on_progress
        )
        if graph is not None:  # stories: their phase changes, deliberations and plans
            report.differences += story_differences(self._app, graph)
        for outbox in outboxes:  # its messages on the stream, against what the log leads to
            report.differences += verify_outbox(self._app, outbox)
            runner = next((r for r in self._runners if r.projection is outbox), None)
            # The last event it handled (most lead to no message, so not the last published).
            report.positions[outbox.name] = runner.position() if runner else 0
        return report

    def wait(self, position: int, timeout: float) -> None:
        for r in list(self._runners):
            r.wait(position, timeout)

    def close(self) -> None:
        """Stop every runner. Idempotent."""
        for r in list(self._runners):
            r.close()

    def _time_at(self, position: int) -> datetime | None:
        if position <= 0:
            return None
        page = self._app.recorder.select_notifications(position, 1)
        if not page:
            return None
        at = getattr(self._app.mapper.to_domain_event(page[0]), "timestamp", None)
        return at if isinstance(at, datetime) else None
