"""The cache's port: a board of deliberation views with the position they were written at.

Adapters: ``ValkeyDeliberationBoard`` (production) and ``InMemoryDeliberationBoard`` (tests, and
the embedded default when no cache server can run).

Writes are atomic with the position and, for a runner, conditional: ``put_many`` names the
position it read (``base``) and its ``Fence``; the board refuses the whole write when either has
changed (``PositionMovedError``, ``ProjectionFencedError``), so a read-fold-write never lands on
top of someone else's write.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import replace
from uuid import UUID

from application.views import DeliberationView
from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence, now_ms

__all__ = ["DeliberationBoard", "InMemoryDeliberationBoard"]


class DeliberationBoard(ABC):
    """Views by deliberation id, plus the cache projection's position, changed atomically."""

    @abstractmethod
    def position(self) -> int:
        """The last position written (0 when none)."""

    @abstractmethod
    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        """The cached view, or None on a miss (never written, expired, dropped, lost)."""

    @property
    @abstractmethod
    def expiry_seconds(self) -> int:
        """How long a finished deliberation's entry lives (0: for ever). Verification needs it
        to tell an entry that expired, as designed, from one the cache lost."""

    def get_many(self, ids: Iterable[UUID]) -> dict[UUID, DeliberationView | None]:
        """Views of ``ids`` (one round trip where the store allows)."""
        return {i: self.get(i) for i in ids}

    @abstractmethod
    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        """Become (or stay) the writer: a fence, or None while another owner's lease is live."""

    @abstractmethod
    def release(self, owner: str) -> None:
        """End ``owner``'s lease now (a clean stop), so a standby need not wait it out."""

    @abstractmethod
    def put_many(
        self,
        views: Mapping[UUID, DeliberationView | None],
        *,
        position: int,
        base: int,
        fence: Fence | None = None,
    ) -> None:
        """Store ``views`` (None drops an entry) and ``position`` in one atomic step.

        Raises:
            PositionMovedError: the stored position is not ``base``.
            ProjectionFencedError: ``fence`` is given and no longer the stored one.
        """

    def put(self, deliberation_id: UUID, view: DeliberationView | None, *, position: int) -> bool:
        """Store ``view`` and ``position`` together, atomically, unless ``position`` is passed.

        Returns:
            False, changing nothing, when ``position`` is not past the stored one.
        """
        while True:
            base = self.position()
            if position <= base:
                return False
            try:
                self.put_many({deliberation_id: view}, position=position, base=base)
                return True
            except PositionMovedError:
                continue

    @abstractmethod
    def reset(self) -> None:
        """Drop every entry and the position (fencing state kept)."""


class InMemoryDeliberationBoard(DeliberationBoard):
    """A dict behind a lock. No TTL: terminal entries stay until the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[UUID, DeliberationView] = {}
        self._position = 0
        self._fence: tuple[int, str] = (0, "")
        self._lease_until = 0

    def position(self) -> int:
        with self._lock:
            return self._position

    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        with self._lock:
            return self._views.get(deliberation_id)

    @property
    def expiry_seconds(self) -> int:
        return 0

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        with self._lock:
            now = now_ms()
            epoch, holder = self._fence
            if holder and holder != owner and self._lease_until > now:
                return None
            if holder != owner:
                epoch += 1
                self._fence = (epoch, owner)
            self._lease_until = now + lease_ms
            return Fence(owner=owner, epoch=epoch, lease_ms=lease_ms)

    def release(self, owner: str) -> None:
        with self._lock:
            if self._fence[1] == owner:
                self._lease_until = 0

    def put_many(
        self,
        views: Mapping[UUID, DeliberationView | None],
        *,
        position: int,
        base: int,
        fence: Fence | None = None,
    ) -> None:
        with self._lock:
            if fence is not None:
                if self._fence != (fence.epoch, fence.owner):
                    msg = f"cache: fence {fence.epoch}:{fence.owner} replaced by {self._fence}"
                    raise ProjectionFencedError(msg)
                self._lease_until = now_ms() + fence.lease_ms
            if self._position != base:
                msg = f"cache: stored position {self._position}, expected {base}"
                raise PositionMovedError(msg, self._position)
            for d_id, view in views.items():
                if view is None:
                    self._views.pop(d_id, None)
                else:
                    self._views[d_id] = replace(view, position=position)
            self._position = position

    def reset(self) -> None:
        with self._lock:
            self._views.clear()
            self._position = 0
