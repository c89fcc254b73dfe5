"""Loops of the callers' own, for writes from plain threads that would otherwise cross into the
loop thread (``_loop_thread.py``) and block.

Each such thread gets an event loop and a resource (a NATS connection) of its own and runs its
write on it, itself. A crossing is three thread wake-ups per write (caller → loop, network →
loop, loop → caller), where a thread doing its own I/O has one; on a single-event save that was
the largest cost after the server's own (measured: 100-200 µs of ~600). A thread already running
an event loop, and the loop thread, cross as before, unless the call is itself a coroutine (see
``_running_loops.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Generic, TypeVar

from eventsourcing.persistence import ProgrammingError

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["CallerLoops"]

_log = logging.getLogger(__name__)


class _Own(Generic[R]):
    """One thread's loop and resource."""

    __slots__ = ("busy", "loop", "resource", "used")

    def __init__(self, loop: asyncio.AbstractEventLoop, resource: R) -> None:
        self.loop = loop
        self.resource = resource
        self.used = time.monotonic()
        self.busy = threading.Lock()  # held while the owner runs it; close() takes it too


class CallerLoops(Generic[R]):
    """Per-thread event loops, each with a resource made by ``setup`` on it, for threads that
    would otherwise cross into a ``LoopThread`` and block.

    Between calls a thread's loop does not run, so its resource (a NATS connection) answers no
    server pings: one idle for ``max_idle_s`` is remade before use, well inside the server's
    stale-connection limit (two missed pings, two minutes apart by default).

    Args:
        setup: makes the resource, on the new loop.
        teardown: releases it, on its loop.
        max_threads: threads beyond this many cross instead (bounds connections).
        max_idle_s: a resource unused this long is remade before its next use.
    """

    def __init__(
        self,
        setup: Callable[[], Coroutine[object, object, R]],
        teardown: Callable[[R], Coroutine[object, object, None]],
        *,
        max_threads: int = 64,
        max_idle_s: float = 60.0,
    ) -> None:
        self._setup = setup
        self._teardown = teardown
        self._max_threads = max_threads
        self._max_idle_s = max_idle_s
        self._local = threading.local()
        self._all: list[_Own[R]] = []
        self._lock = threading.Lock()
        self._closed = False

    def available(self) -> bool:
        """Whether the calling thread may run on a loop of its own: it runs no event loop (it
        would have to block that one instead), the store is open, and there is room."""
        if self._closed or asyncio._get_running_loop() is not None:
            return False
        return getattr(self._local, "own", None) is not None or len(self._all) < self._max_threads

    def run(self, op: Callable[[R], Coroutine[object, object, T]], *, timeout: float) -> T:
        """Run ``op(resource)`` on the calling thread's own loop (made on first use).

        Raises:
            ProgrammingError: after close().
            TimeoutError: ``op`` did not finish within ``timeout`` seconds; it is cancelled.
        """
        own = self._own()
        with own.busy:
            if self._closed:
                raise ProgrammingError("the event store is closed")
            if time.monotonic() - own.used > self._max_idle_s:
                self._renew(own)
            try:
                return own.loop.run_until_complete(asyncio.wait_for(op(own.resource), timeout))
            finally:
                own.used = time.monotonic()

    def _own(self) -> _Own[R]:
        own: _Own[R] | None = getattr(self._local, "own", None)
        if own is not None:
            return own
        loop = asyncio.new_event_loop()
        try:
            resource = loop.run_until_complete(self._setup())
        except BaseException:
            loop.close()
            raise
        own = _Own(loop, resource)
        with self._lock:
            self._all.append(own)
        self._local.own = own
        return own

    def _renew(self, own: _Own[R]) -> None:
        with contextlib.suppress(Exception):  # the old one may be dead already: that is why
            own.loop.run_until_complete(self._teardown(own.resource))
        own.resource = own.loop.run_until_complete(self._setup())

    def close(self, timeout: float = 5.0) -> None:
        """Release every thread's resource and loop. Idempotent; a thread still running its
        call is given ``timeout`` seconds, then its loop is left to it."""
        self._closed = True
        with self._lock:
            owns, self._all = self._all, []
        if not owns:
            return
        if asyncio._get_running_loop() is None:
            self._release(owns, timeout)
            return
        # Closed from a running event loop (an async application's shutdown): another loop
        # cannot run on this thread, so a helper thread runs the teardowns.
        helper = threading.Thread(
            target=self._release, args=(owns, timeout), name="eventstore-close", daemon=True
        )
        helper.start()
        helper.join(timeout * 2)

    def _release(self, owns: list[_Own[R]], timeout: float) -> None:
        for own in owns:
            if not own.busy.acquire(timeout=timeout):
                _log.warning("an event-store write still running at close: left to finish")
                continue
            try:
                with contextlib.suppress(Exception):
                    own.loop.run_until_complete(
                        asyncio.wait_for(self._teardown(own.resource), timeout)
                    )
                own.loop.close()
            finally:
                own.busy.release()
