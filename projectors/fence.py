"""Fencing: one writer per projection, and a writer that was replaced writes nothing more.

An instance ``claim``s a projection in its store and gets a ``Fence``: its owner token and an
epoch that grows with each new owner. Every write carries the fence and the store checks it in the
same atomic step as the write (a graph transaction; a Valkey Lua script), so an instance that was
paused, partitioned or simply slower than its replacement is refused (``ProjectionFencedError``)
instead of writing on top of it. The claim also takes a lease (``lease_ms``), renewed by each
write and by the runner while idle: a standby instance takes over only once the owner has gone
quiet for a whole lease, and safety never depends on clocks, only on the epoch check.

The lease is short (``DEFAULT_LEASE_MS``: 3 s, ``FLEET_PROJECTION_LEASE``) because it only
decides *when* a crashed owner's work moves, never whether two write: the runner renews it every
second, so a restarted or standby projector resumes within about 3 s of the crash. A write or a
checkpoint longer than the lease lets a standby claim meanwhile; the fence then refuses the old
owner's next write, and it stands by (a handover, not a lost or doubled event).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["DEFAULT_LEASE_MS", "Fence", "now_ms"]

DEFAULT_LEASE_MS = 3_000


def now_ms() -> int:
    """Wall-clock milliseconds (leases compare the writers' clocks; fencing does not)."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Fence:
    """Who writes: the owner, the epoch it claimed, and how long each write extends its lease.

    A write checks owner and epoch both: a store that lost its state (an emptied cache) may hand
    the same epoch number to a new owner, never the same (epoch, owner).
    """

    owner: str
    epoch: int
    lease_ms: int
