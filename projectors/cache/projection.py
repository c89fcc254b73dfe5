"""The cache projection: folds each Deliberation event into its view and writes it to a board."""

from __future__ import annotations

from uuid import UUID

from projectors.cache.board import DeliberationBoard
from projectors.cache.fold import evolve, handles

__all__ = ["CacheProjection"]


class CacheProjection:
    """Keeps a ``DeliberationBoard`` equal to the replay of each deliberation's events.

    Reads the current entry, folds the event into it (pure), writes the result and the position in
    one atomic step. One writer per board is assumed (the runner's thread); a second writer racing
    on the same position is rejected by the board's position check.
    """

    def __init__(self, board: DeliberationBoard, *, name: str = "cache") -> None:
        self.name = name
        self.board = board

    def position(self) -> int:
        return self.board.position()

    def apply(self, event: object, position: int) -> bool:
        if not handles(event):
            return False
        if position <= self.board.position():  # cheap pre-check; the board checks atomically too
            return False
        deliberation_id: UUID = event.originator_id  # type: ignore[attr-defined]
        current = self.board.get(deliberation_id)
        return self.board.put(deliberation_id, evolve(current, event), position=position)
