"""The one sync-to-async bridge: a daemon thread that runs an asyncio event loop.

The eventsourcing recorder API is synchronous and is called from many threads (the application
runs in worker threads via ``asyncio.to_thread``; projection runners have their own threads).
nats.py is asyncio-only and its client belongs to the loop it was created on. So each factory
owns one loop in one daemon thread, the NATS connection lives there, and every recorder call
crosses over with ``run_coroutine_threadsafe`` (~0.1 ms per crossing on this kind of machine).

Nothing else in Fleet bridges sync and async; keep it that way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from eventsourcing.persistence import ProgrammingError

T = TypeVar("T")

__all__ = ["LoopThread"]


class LoopThread:
    """One asyncio event loop running forever in one daemon thread.

    Args:
        name: the thread's name, shown in tracebacks and thread dumps.
    """

    def __init__(self, name: str = "eventstore-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._closed = False
        self._thread.start()
        self._started.wait()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._started.set)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None) -> T:
        """Run ``coro`` on the loop and block the calling thread until it finishes.

        Raises:
            ProgrammingError: called from the loop's own thread (it would deadlock), or after
                close().
            TimeoutError: ``coro`` did not finish within ``timeout`` seconds; it is cancelled.
        """
        if self.in_loop_thread():
            coro.close()
            msg = "LoopThread.run() called from its own event loop thread (would deadlock)"
            raise ProgrammingError(msg)
        if self._closed:
            coro.close()
            msg = "LoopThread is closed"
            raise ProgrammingError(msg)
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            msg = "LoopThread closed while the operation was running"
            raise ProgrammingError(msg) from None
        except concurrent.futures.TimeoutError:
            future.cancel()
            msg = f"operation did not finish within {timeout} s"
            raise TimeoutError(msg) from None

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Start ``coro`` on the loop from any thread and do not wait for it (clean-up work)."""
        if self._closed:
            coro.close()
            return
        asyncio.run_coroutine_threadsafe(coro, self._loop)

    def close(self, *, timeout: float = 5.0) -> None:
        """Cancel what still runs on the loop, stop it and join its thread. Idempotent.

        Threads blocked in run() get ProgrammingError rather than waiting out their timeout.
        """
        if self._closed:
            return
        self._closed = True
        if self.in_loop_thread():
            self._loop.stop()
            return
        asyncio.run_coroutine_threadsafe(self._cancel_all(), self._loop)
        self._thread.join(timeout)

    async def _cancel_all(self) -> None:
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop.stop()
