"""What the logs of one store know about the stream: each subject's last (position, sequence)
and the highest sequence seen.

The loop thread's log and every writing thread's own log (see ``JetStreamLog.sibling``) share one
``Positions``, each from its own event loop, so every change to it holds its lock. Look-ups take
no lock: a stale entry is harmless, since a write decided on it is refused by the server
(``Nats-Expected-Last-Subject-Sequence``), and the writer refreshes and decides again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from eventsourcing.persistence import DataError

from eventstore._codec import position
from eventstore._records import Row

__all__ = ["Last", "Positions"]

_CACHE_SIZE: Final = 50_000


@dataclass(slots=True)
class Last:
    position: int
    seq: int


class Positions:
    """The position cache of a store, shared by every connection's log (the loop thread's and
    each writing thread's own): remembers each subject's last (position, seq), forgets, and
    records the highest sequence seen. Thread-safe."""

    def __init__(self) -> None:
        self._last: OrderedDict[str, Last] = OrderedDict()
        self._lock = threading.Lock()
        self.high_water = 0
        """Highest stream sequence this process has seen. With R>1, a direct get may be answered
        by a lagging replica; "min_last_seq" makes only an up-to-date one answer, which gives
        read-your-writes without routing every read to the leader."""

    def get(self, subject: str) -> Last | None:
        """The subject's last (position, seq) as known, or None (not cached)."""
        return self._last.get(subject)

    def seen(self, seq: int) -> int:
        """Record ``seq`` as seen (the high-water mark never moves back); return it."""
        if seq > self.high_water:
            with self._lock:
                self.high_water = max(self.high_water, seq)
        return seq

    def remember(self, subject: str, position: int, seq: int) -> None:
        """Cache a subject's last (position, seq); never move it backwards."""
        with self._lock:
            last = self._last.get(subject)
            if last is None or seq > last.seq:
                self._last[subject] = Last(position, seq)
            self._last.move_to_end(subject)
            while len(self._last) > _CACHE_SIZE:
                self._last.popitem(last=False)

    def remember_row(self, subject: str, row: Row) -> None:
        try:
            self.remember(subject, position(row.payload), row.seq)
        except DataError:
            # Not ours to decode: the recorder names it (sequence and subject) to its caller.
            self.forget(subject)

    def forget(self, subject: str) -> None:
        with self._lock:
            self._last.pop(subject, None)
