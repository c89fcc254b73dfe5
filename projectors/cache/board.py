"""The cache's port: a board of deliberation views with the position they were written at.

Adapters: ``ValkeyDeliberationBoard`` (production) and ``InMemoryDeliberationBoard`` (tests, and
the embedded default when no cache server can run).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import replace
from uuid import UUID

from projectors.cache.view import DeliberationView

__all__ = ["DeliberationBoard", "InMemoryDeliberationBoard"]


class DeliberationBoard(ABC):
    """Views by deliberation id, plus the cache projection's position, changed atomically."""

    @abstractmethod
    def position(self) -> int:
        """The last position written (0 when none)."""

    @abstractmethod
    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        """The cached view, or None on a miss (never written, expired, dropped, lost)."""

    @abstractmethod
    def put(self, deliberation_id: UUID, view: DeliberationView | None, *, position: int) -> bool:
        """Store ``view`` (None drops the entry) and ``position`` together, atomically.

        Returns:
            False, changing nothing, when ``position`` is not past the stored one.
        """


class InMemoryDeliberationBoard(DeliberationBoard):
    """A dict behind a lock. No TTL: terminal entries stay until the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[UUID, DeliberationView] = {}
        self._position = 0

    def position(self) -> int:
        with self._lock:
            return self._position

    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        with self._lock:
            return self._views.get(deliberation_id)

    def put(self, deliberation_id: UUID, view: DeliberationView | None, *, position: int) -> bool:
        with self._lock:
            if position <= self._position:
                return False
            if view is None:
                self._views.pop(deliberation_id, None)
            else:
                self._views[deliberation_id] = replace(view, position=position)
            self._position = position
            return True
