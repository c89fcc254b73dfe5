"""A resource per running event loop, for coroutines on another running loop (the dispatcher's,
the API's) that would otherwise cross into the loop thread (``_loop_thread.py``).

That loop gets a resource of its own, made on it, and the coroutine runs there, awaited
directly. No thread is involved at all (a crossing costs two thread wake-ups, each one a GIL
hand-off that waits behind whatever the other threads are doing), and the loop runs between
calls, so its connection answers the server's pings.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Generic, TypeVar

R = TypeVar("R")

__all__ = ["RunningLoops"]


class RunningLoops(Generic[R]):
    """A resource per running event loop, made on that loop by ``setup`` on first use.

    For coroutines that would otherwise cross into a ``LoopThread`` from a loop of their own:
    ``await get()`` returns the calling loop's resource, which they use directly. A loop that
    closes is forgotten with its resource (weakly keyed); ``close`` tears each one down on its
    own loop when that loop still runs.

    Args:
        setup: makes the resource, on the calling loop.
        teardown: releases it, on its loop.
        max_loops: loops beyond this many get None (the caller crosses instead).
    """

    def __init__(
        self,
        setup: Callable[[], Coroutine[object, object, R]],
        teardown: Callable[[R], Coroutine[object, object, None]],
        *,
        max_loops: int = 16,
    ) -> None:
        self._setup = setup
        self._teardown = teardown
        self._max_loops = max_loops
        self._made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, R] = (
            weakref.WeakKeyDictionary()
        )
        self._making: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Future[R | None]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._closed = False

    async def get(self) -> R | None:
        """The running loop's resource (made now if it has none), or None when closed or full.

        Raises:
            Whatever ``setup`` raises (the next call tries again).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            made = self._made.get(loop)
            if made is not None or self._closed:
                return made
            making = self._making.get(loop)
            if making is None:
                if len(self._made) + len(self._making) >= self._max_loops:
                    return None
                making = loop.create_future()
                self._making[loop] = making
                mine = True
            else:
                mine = False
        if not mine:
            return await asyncio.shield(making)
        try:
            resource = await self._setup()
        except BaseException as e:
            with self._lock:
                self._making.pop(loop, None)
            making.set_exception(e)
            making.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        with self._lock:
            self._making.pop(loop, None)
            if self._closed:
                keep = False
            else:
                self._made[loop] = resource
                keep = True
        if not keep:
            await self._teardown(resource)
            making.set_result(None)
            return None
        making.set_result(resource)
        return resource

    def close(self) -> None:
        """Forget every resource; each one is torn down on its own loop if that loop still runs
        (from that loop itself: as a task it does not wait for). Idempotent."""
        with self._lock:
            self._closed = True
            made = list(self._made.items())
            self._made.clear()
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, resource in made:
            if loop.is_closed():
                continue
            coro = self._teardown(resource)
            try:
                if loop is current:
                    loop.create_task(coro)
                elif loop.is_running():
                    asyncio.run_coroutine_threadsafe(coro, loop)
                else:
                    coro.close()
            except RuntimeError:  # the loop closed meanwhile
                coro.close()
