"""A request-reply service on core NATS: one subject pattern in a queue group, each request
answered in a task of its own.

Both of Fleet's request services work this way (the projections a projectors node serves, the
agent turns a node with agents serves), and both need the same three things right: subscribed at
the server before anyone is told it serves, a slow request never holds up the next, and a stop
that ends the requests in flight rather than leaving tasks behind (their askers time out).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

__all__ = ["Responder"]

log = logging.getLogger(__name__)


class Responder:
    """Answers requests on ``subject`` (a wildcard pattern is fine) in ``queue``: each message
    goes to ``answer`` in a task of its own, which publishes its reply.

    Lifecycle: ``start`` (subscribed at the server when it returns), then ``close``
    (idempotent). Loop affinity: the connection's loop.
    """

    def __init__(
        self, nc: NATS, subject: str, queue: str, answer: Callable[[Msg], Coroutine[Any, Any, None]]
    ) -> None:
        self._nc = nc
        self.subject = subject
        self._queue = queue
        self._answer = answer
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._sub = await self._nc.subscribe(self.subject, queue=self._queue, cb=self._on_request)
        await self._nc.flush()  # subscribed at the server before anyone is told we serve

    async def close(self) -> None:
        """Stop taking requests and end those in flight (their askers time out). Idempotent."""
        if self._sub is not None:
            sub, self._sub = self._sub, None
            await sub.unsubscribe()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _on_request(self, msg: Msg) -> None:
        task = asyncio.create_task(self._answer(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
