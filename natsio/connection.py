"""Closing a NATS connection without losing what it sent, and without nats-py's drain hang."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from nats.errors import Error as NatsError

__all__ = ["close_connection"]


async def close_connection(nc: Any, *, timeout_s: float = 5.0) -> None:
    """Flush what this connection sent (publishes, acks), then close it. Idempotent.

    Not ``nc.drain()``: for pull subscriptions nats-py's drain waits on a pending queue that
    nothing empties (fetch does not mark items done), so it always runs into its timeout, and
    the cancelled drain leaves an "exception was never retrieved" error in the log. Nothing is
    lost by closing instead: a delivery not yet acked is redelivered by JetStream.
    """
    if nc.is_closed:
        return
    with contextlib.suppress(NatsError, TimeoutError, OSError):
        await nc.flush(timeout=timeout_s)
    with contextlib.suppress(NatsError, TimeoutError, OSError):
        await asyncio.wait_for(nc.close(), timeout_s)
