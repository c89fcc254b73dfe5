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


@dataclass(frozen=True, slots=True)
class Write:
    """One record to append: ``position`` must exceed the subject's last stored position."""

    subject: str
    position: int
    payload: bytes
