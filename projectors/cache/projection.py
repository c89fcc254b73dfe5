"""The cache projection: folds each Deliberation event into its view and writes it to a board."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from aggregates import Deliberation
from application.views import DeliberationView
from projectors.cache.board import DeliberationBoard
from projectors.cache.fold import evolve, handles
from projectors.errors import PositionMovedError
from projectors.fence import Fence

__all__ = ["CacheProjection"]


class CacheProjection:
    """Keeps a ``DeliberationBoard`` equal to the replay of each deliberation's events.

    A batch is: read the entries it touches (one pipeline), fold its events into them in order
    (pure), write the changed entries and the batch's last position in one atomic step that
    checks the position it read and the writer's fence. So a crash never leaves entries without
    their position, a redelivered event changes nothing, and a second writer is refused.
    """

    def __init__(self, board: DeliberationBoard, *, name: str = "cache") -> None:
        self.name = name
        self.board = board

    def position(self) -> int:
        return self.board.position()

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        return self.board.claim(owner, lease_ms)

    def release(self, owner: str) -> None:
        self.board.release(owner)

    def reset(self) -> None:
        self.board.reset()

    def apply(self, event: object, position: int) -> bool:
        """Apply one event unfenced (tools and tests); False when not ours or already applied."""
        if not handles(event):
            return False
        while True:
            base = self.board.position()
            try:
                return self.apply_batch([(event, position)], base=base) > 0
            except PositionMovedError:
                continue

    def apply_batch(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> int:
        """Fold and write the events of ``items`` past ``base``; returns how many were ours.

        Raises:
            PositionMovedError: the board is not at ``base`` (nothing written).
            ProjectionFencedError: ``fence`` was replaced (nothing written).
        """
        fresh = [(e, p) for e, p in items if p > base]
        if not fresh:
            return 0
        ours = [e for e, _ in fresh if handles(e)]
        # Read only the entries the batch does not start itself: a deliberation whose first event
        # here is its Requested starts from that event whatever is stored (a catch-up's usual
        # case, so most batches read little or nothing).
        first: dict[UUID, object] = {}
        for e in ours:
            first.setdefault(e.originator_id, e)  # type: ignore[attr-defined]
        ids = [d for d, e in first.items() if not isinstance(e, Deliberation.Requested)]
        views: dict[UUID, DeliberationView | None] = self.board.get_many(ids) if ids else {}
        for e in ours:
            d_id: UUID = e.originator_id  # type: ignore[attr-defined]
            views[d_id] = evolve(views.get(d_id), e)
        self.board.put_many(views, position=fresh[-1][1], base=base, fence=fence)
        return len(ours)
