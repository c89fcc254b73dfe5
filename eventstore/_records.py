"""The values the log works with: where it lives, what it appends, what it reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

__all__ = ["MAX_BATCH", "Row", "StreamSettings", "Write"]

MAX_BATCH: Final = 1000
"""The server's limit on messages per atomic batch (error 10199 beyond it)."""


class Row(NamedTuple):
    """One stored message as read back: its stream sequence, payload and subject."""

    seq: int
    payload: bytes
    subject: str


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """Where the log lives. Built by the factory from the environment."""

    url: str
    stream: str
    prefix: str
    replicas: int = 1
    timeout: float = 5.0

    @property
    def election_window(self) -> float:
        """How long a read or the set-up waits out a leader election before it gives up: four
        request timeouts (20 s by default). A clustered stream that lost the node leading it
        elects a new leader in a few seconds, sometimes more than one timeout; a process
        restarted meanwhile must wait, not exit. Well inside the 10 timeouts that bound any
        one operation of the store."""
        return self.timeout * 4.0


@dataclass(frozen=True, slots=True)
class Write:
    """One record to append: ``position`` must exceed the subject's last stored position."""

    subject: str
    position: int
    payload: bytes
