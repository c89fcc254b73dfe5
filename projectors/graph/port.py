"""The graph's port: apply statements with a position atomically, and answer read-only Cypher.

Adapters: ``LadybugGraph`` (embedded, the default and the tests) and ``Neo4jGraph`` (production).
Both run the same ``projectors.graph.statements``; only schema set-up differs.

Fencing: ``claim`` makes a writer the projection's owner with a new ``epoch`` (or renews its
lease); a write given an epoch checks it in its own transaction and raises
``ProjectionFencedError`` when another owner has claimed since. A write given a ``base`` checks
that the stored position is still that one (``PositionMovedError`` otherwise).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from application.ports import CypherParams, CypherRow
from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence, now_ms
from projectors.graph.statements import Statement

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_QUERY_TIMEOUT_S",
    "Batch",
    "DecisionGraph",
    "Fence",
    "Row",
    "Stored",
    "now_ms",
]

Row = CypherRow
"""One result row, column name to a plain value (nodes come back as dicts of properties)."""

DEFAULT_LIMIT = 1000
DEFAULT_QUERY_TIMEOUT_S = 10.0

Batch = Sequence[tuple[int, Sequence[Statement]]]
"""(position, that event's statements) in position order; an event not ours has none."""


@dataclass(frozen=True)
class Stored:
    """The Projection node's state."""

    position: int = 0
    epoch: int | None = None
    owner: str | None = None
    lease_until: int | None = None

    def check(self, name: str, *, base: int | None, fence: Fence | None) -> None:
        """Raise when a write based on ``base`` under ``fence`` must not go ahead."""
        if fence is not None and (self.epoch, self.owner) != (fence.epoch, fence.owner):
            msg = (
                f"Projection {name}: epoch {fence.epoch} fenced out by {self.epoch} ({self.owner})"
            )
            raise ProjectionFencedError(msg)
        if base is not None and self.position != base:
            msg = f"Projection {name}: stored position {self.position}, expected {base}"
            raise PositionMovedError(msg, self.position)

    def claimed_by(self, owner: str, lease_ms: int, now: int) -> int | None:
        """The epoch ``owner`` gets, or None while another owner's lease is live."""
        if self.owner and self.owner != owner and (self.lease_until or 0) > now:
            return None
        if self.owner == owner and self.epoch is not None:
            return self.epoch
        return (self.epoch or 0) + 1


class DecisionGraph(ABC):
    """A Cypher graph that holds Fleet's decision history and the graph projection's position."""

    @abstractmethod
    def ensure_schema(self) -> None:
        """Create tables, constraints and indexes that are missing. Idempotent."""

    @abstractmethod
    def stored(self, name: str) -> Stored:
        """Projection ``name``'s position and fencing state."""

    def position(self, name: str) -> int:
        """Projection ``name``'s stored position (0 when none)."""
        return self.stored(name).position

    @abstractmethod
    def claim(self, name: str, owner: str, lease_ms: int) -> int | None:
        """Become (or stay) the writer of ``name``: its epoch, or None while another holds it."""

    @abstractmethod
    def release(self, name: str, owner: str) -> None:
        """End ``owner``'s lease now (a clean stop), so a standby need not wait it out."""

    @abstractmethod
    def apply_batch(
        self, name: str, batch: Batch, *, base: int | None = None, fence: Fence | None = None
    ) -> int:
        """Run the statements of the events past the stored position, and store the last
        position of ``batch``, in one transaction.

        Returns:
            How many events of ``batch`` were past the stored position (0: nothing changed).

        Raises:
            ProjectionFencedError: ``fence`` is not the stored epoch.
            PositionMovedError: ``base`` is given and is not the stored position.
        """

    def apply(self, name: str, position: int, statements: Sequence[Statement]) -> bool:
        """Run ``statements`` and store ``position`` in one transaction.

        Returns:
            False, changing nothing, when ``position`` is not past the stored one.
        """
        return self.apply_batch(name, [(position, statements)]) > 0

    def checkpoint(self) -> None:
        """Fold what recent writes left in the engine's log into the store, if the log has grown
        enough to be worth the pause; the runner calls it when the projection goes idle or has
        just caught up, so the engine need not do it in the middle of a live stream. A no-op
        where the engine has nothing of the kind (Neo4j).
        """
        return

    @abstractmethod
    def reset(self, name: str) -> None:
        """Delete the projected graph and set ``name``'s position to 0 (fencing state kept)."""

    @abstractmethod
    def query(
        self,
        cypher: str,
        params: CypherParams | None = None,
        limit: int = DEFAULT_LIMIT,
        *,
        timeout_s: float | None = None,
    ) -> list[Row]:
        """Run a read-only query and return at most ``limit`` rows, within ``timeout_s``.

        Raises:
            ReadOnlyQueryError: the query would write (refused before it reaches the engine).
            InvalidQueryError: the engine rejected it.
            QueryTimeoutError: it ran past its time limit.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s). Idempotent."""
