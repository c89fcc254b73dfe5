"""The loop thread: a daemon thread that runs an asyncio event loop, and the bridge every
recorder call crosses from sync to async.

The eventsourcing recorder API is synchronous and is called from many threads (the application
runs in worker threads via ``asyncio.to_thread``; projection runners have their own threads).
nats.py is asyncio-only and its client belongs to the loop it was created on. So each factory
owns one loop in one daemon thread, the NATS connection lives there, and every recorder call
crosses over once (but for a write that is the only one in flight: see ``_caller_loops.py``; and
a coroutine on a running loop of its own: see ``_running_loops.py``).

The crossing is a ``call_soon_threadsafe`` that starts a task (callers arriving while one is
pending share it: one wake-up of the loop for all of them), and a plain ``threading.Lock`` the
caller blocks on and the task releases in its last step. ``run_coroutine_threadsafe`` does the
same with a ``concurrent.futures.Future`` (a Condition, a second future chained to the task, and
their callbacks), which cost about twice as much per crossing on this kind of machine (~60-120 µs
against ~35-60 µs); on a single-event save, the crossing is a third of what we add to a publish.

The loop thread, ``_caller_loops.py`` and ``_running_loops.py`` are the event store's bridges
between sync and async. The layer above bridges too, the other way, on its own: the application
layer's coroutines call the library's synchronous Application in worker threads
(``asyncio.to_thread``), and read a blocking subscription through a thread that hands each
notification to their event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

from eventsourcing.persistence import ProgrammingError

T = TypeVar("T")

__all__ = ["LoopThread"]

_PENDING: Any = object()


class _Crossing(Generic[T]):
    """One coroutine handed to the loop thread; subclasses say how its outcome gets back."""

    __slots__ = ("coro", "task")

    def __init__(self, coro: Coroutine[object, object, T]) -> None:
        self.coro = coro
        self.task: asyncio.Task[None] | None = None

    def abandoned(self) -> bool:
        """The caller gave up before the coroutine started."""
        raise NotImplementedError

    def succeed(self, result: T) -> None:
        raise NotImplementedError

    def fail(self, error: BaseException) -> None:
        raise NotImplementedError

    def start(self, loop: asyncio.AbstractEventLoop) -> None:  # on the loop thread
        if self.abandoned():
            self.coro.close()
            return
        self.task = loop.create_task(self._settled())

    async def _settled(self) -> None:  # on the loop thread
        """Run the coroutine and hand its outcome back from its own last step: a done-callback
        would run one loop iteration later, and on a single-event save each iteration shows."""
        try:
            result = await self.coro
        except asyncio.CancelledError:
            self.fail(ProgrammingError("LoopThread closed while the operation was running"))
            raise
        except BaseException as e:  # handed to the caller, who raises it
            self.fail(e)
            if not isinstance(e, Exception):
                raise  # KeyboardInterrupt, SystemExit: the loop must see them too
        else:
            self.succeed(result)

    def cancel(self) -> None:  # on the loop thread
        if self.task is not None:
            self.task.cancel()


class _Call(_Crossing[T]):
    """A crossing from a thread: the caller blocks on ``done`` until the outcome is in."""

    __slots__ = ("done", "error", "given_up", "result")

    def __init__(self, coro: Coroutine[object, object, T]) -> None:
        super().__init__(coro)
        self.done = threading.Lock()
        self.done.acquire()
        self.result: T = _PENDING
        self.error: BaseException | None = None
        self.given_up = False

    def abandoned(self) -> bool:
        return self.given_up  # the caller timed out before it started

    def succeed(self, result: T) -> None:  # on the loop thread
        self.result = result
        self.done.release()

    def fail(self, error: BaseException) -> None:  # on the loop thread
        """Wake the caller with ``error``, unless it was woken already."""
        if self.error is None and self.result is _PENDING:
            self.error = error
            self.done.release()


class _AsyncCall(_Crossing[T]):
    """A crossing from another event loop: the caller awaits ``future`` on its own loop."""

    __slots__ = ("caller", "future")

    def __init__(
        self, coro: Coroutine[object, object, T], caller: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(coro)
        self.caller = caller
        self.future: asyncio.Future[T] = caller.create_future()

    def abandoned(self) -> bool:
        return self.future.done()  # the caller was cancelled (or timed out) before it started

    def succeed(self, result: T) -> None:
        self._settle(result, None)

    def fail(self, error: BaseException) -> None:  # any thread
        self._settle(None, error)

    def _settle(self, result: Any, error: BaseException | None) -> None:
        def settle() -> None:  # on the caller's loop
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)

        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
            self.caller.call_soon_threadsafe(settle)


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
        self._calls: set[_Crossing[Any]] = set()
        self._arrivals: list[_Crossing[Any]] = []
        self._arrivals_lock = threading.Lock()
        self._drain_scheduled = False
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
            # Nothing will run on this loop again: wake whoever still waits on it.
            for call in list(self._calls):
                call.fail(ProgrammingError("LoopThread closed while the operation was running"))
            self._loop.close()

    def run(self, coro: Coroutine[object, object, T], *, timeout: float | None) -> T:
        """Run ``coro`` on the loop and block the calling thread until it finishes.

        Raises:
            ProgrammingError: called from the loop's own thread (it would deadlock), or after
                close().
            TimeoutError: ``coro`` did not finish within ``timeout`` seconds; it is cancelled.
        """
        call = _Call(coro)
        self._hand_over(call, "run")
        try:
            if not call.done.acquire(timeout=-1 if timeout is None else timeout):
                # As run_coroutine_threadsafe's future.cancel() did: a result that lands now is
                # dropped; a write's outcome is settled by its own read-back, never by this.
                call.given_up = True
                self._cancel_later(call)
                msg = f"operation did not finish within {timeout} s"
                raise TimeoutError(msg)
            if call.error is not None:
                raise call.error
            return call.result
        finally:
            self._calls.discard(call)

    async def run_async(self, coro: Coroutine[object, object, T], *, timeout: float | None) -> T:
        """Run ``coro`` on this loop and await it from the caller's (another) running loop.

        Raises:
            ProgrammingError: called from this loop's own thread, or after close().
            TimeoutError: ``coro`` did not finish within ``timeout`` seconds; it is cancelled.
        """
        call = _AsyncCall(coro, asyncio.get_running_loop())
        self._hand_over(call, "run_async")
        try:
            async with asyncio.timeout(timeout):
                # Shielded: the future is settled from the loop thread, never cancelled under it
                # by the caller; the operation itself is cancelled below, on its own loop.
                return await asyncio.shield(call.future)
        except (TimeoutError, asyncio.CancelledError):
            # As run() does on a timeout: a write's outcome is settled by its own read-back.
            call.future.cancel()
            self._cancel_later(call)
            raise
        finally:
            self._calls.discard(call)

    def _hand_over(self, call: _Crossing[Any], what: str) -> None:
        """Start ``call`` on the loop and track it, so that close() wakes its caller.

        Raises:
            ProgrammingError: from the loop's own thread (it would deadlock), or after close().
        """
        if self.in_loop_thread():
            call.coro.close()
            msg = f"LoopThread.{what}() called from its own event loop thread (would deadlock)"
            raise ProgrammingError(msg)
        if self._closed:
            call.coro.close()
            raise ProgrammingError("LoopThread is closed")
        self._calls.add(call)
        with self._arrivals_lock:
            self._arrivals.append(call)
            if self._drain_scheduled:
                return  # the loop will take it with the others: no second wake-up
            self._drain_scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop closed under us
            self._calls.discard(call)
            call.coro.close()
            raise ProgrammingError("LoopThread is closed") from None

    def _drain(self) -> None:  # on the loop thread
        """Start every crossing that arrived since the last drain: concurrent callers share one
        wake-up of the loop (a self-pipe write and a loop iteration each, otherwise)."""
        with self._arrivals_lock:
            arrivals, self._arrivals = self._arrivals, []
            self._drain_scheduled = False
        for call in arrivals:
            try:
                call.start(self._loop)
            except Exception as e:  # one that cannot start must not strand the others
                call.coro.close()
                call.fail(e)

    def _cancel_later(self, call: _Crossing[Any]) -> None:
        try:
            self._loop.call_soon_threadsafe(call.cancel)
        except RuntimeError:
            pass  # closed: nothing runs any more

    def submit(self, coro: Coroutine[object, object, object]) -> None:
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
