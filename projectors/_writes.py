"""The runner's write side: a batch written on a writer thread while the runner stages the next.

A catch-up alternates two kinds of work: what needs no store (decoding events, a projection's
translation of them into statements) and the write itself, which mostly waits for the store.
``Writer`` holds at most one write in flight, so the runner's thread stages batch N+1 while
batch N is written, and the store never sees two writes of one runner at once, nor a write
beside the runner's own calls (``position``, ``claim``, ``idle``): the runner finishes the write
in flight first.

Thread-safety: one thread (the runner's) calls every method.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

__all__ = ["Staged", "Writer"]


@dataclass(frozen=True)
class Staged:
    """A batch ready to write: ``write`` stores it and returns how many events were ours."""

    write: Callable[[], int]
    first: int
    last: int
    at: datetime | None
    """The recording time of its last event."""


class Writer:
    """One writer thread named ``name``, one write in flight at most."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._pending: tuple[Staged, Future[int]] | None = None

    @property
    def busy(self) -> bool:
        """A write is in flight (not yet finished by ``finish``)."""
        return self._pending is not None

    def submit(self, staged: Staged) -> None:
        """Start writing ``staged``; the write before it must be finished."""
        if self._pending is not None:
            raise RuntimeError("finish the write in flight before submitting another")
        self._pending = (staged, self._pool.submit(staged.write))

    def finish(self) -> tuple[Staged, int] | None:
        """Wait for the write in flight, if any: its batch and what it applied; raises the
        write's error (the write is finished either way)."""
        if self._pending is None:
            return None
        staged, future = self._pending
        self._pending = None
        return staged, future.result()

    def close(self) -> None:
        """Wait for the write in flight, dropping its error (the caller is leaving on one of its
        own), and end the thread. Idempotent."""
        if self._pending is not None:
            self._pending[1].exception()
            self._pending = None
        self._pool.shutdown(wait=True)
