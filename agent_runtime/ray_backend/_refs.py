"""Awaiting, cancelling and killing through Ray without blocking the event loop, as a driver
connected to a cluster or as a Ray client (``ray://``).

A Ray client's object reference does not know its id until the client server has acknowledged
the call that made it (a round trip: client → proxy → the connection's server → back), and
``await ref``, ``ray.cancel`` and ``ray.kill`` each wait for that, or for their own reply, on the
calling thread. On the event loop that is a round trip of stall per call in normal operation, and
up to the client's reconnect grace (30 s) when the head goes away: the whole node froze, the API
and the dispatcher's lease beats with it (measured: an 11 s beat gap while a head was restarting).
Here those waits run on a few threads of their own; a driver's references (no such wait) are
awaited directly, as before.

When the client has lost its connection for good, Ray answers every call with a plain
``Exception`` ("Ray Client is not connected"), and ``ray.kill`` with an ``AssertionError``:
``connected`` says which state Ray is in, so callers can tell an agent's failure from a lost
cluster.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from typing import TypeVar, cast

import ray
from ray import ObjectRef
from ray.actor import ActorHandle
from ray.exceptions import RayError

__all__ = ["cancel", "connected", "connection_lost", "is_client_ref", "kill", "result"]

T = TypeVar("T")

_THREADS = 4
"""Threads that wait on the client: each wait is a round trip (milliseconds), or the reconnect
grace for all of them at once, so a few serve any number of calls."""

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(_THREADS, "ray-client-wait")
        return _pool


def is_client_ref(ref: object) -> bool:
    """Whether ``ref`` is a Ray client's object reference (made through ``ray://``)."""
    from ray.util.client.common import ClientObjectRef

    return isinstance(ref, ClientObjectRef)


def connected() -> bool:
    """Whether this process still has Ray: a driver's ``ray.init``, or a live client connection
    (False once a client's connection is lost for good)."""
    return bool(ray.is_initialized())


def connection_lost(e: BaseException) -> bool:
    """Whether ``e``, raised by a Ray call, means this process lost Ray rather than that the call
    failed: a Ray client's broken connection (``ConnectionError``; an actor's own errors arrive
    as ``RayTaskError``), or any error once Ray is no longer there."""
    return isinstance(e, ConnectionError) or not connected()


async def result(ref: ObjectRef[T]) -> T:
    """The value of ``ref`` (raises what ``await ref`` raises), never blocking the loop.

    Cancelling the caller abandons the wait; the call itself goes on (``cancel`` stops it).
    """
    if not is_client_ref(ref):
        return await ref
    loop = asyncio.get_running_loop()
    # ``future()`` waits for the reference's id (the client server's acknowledgement).
    pending: concurrent.futures.Future[T] = await loop.run_in_executor(_executor(), ref.future)
    # Shielded: a cancelled caller must not cancel the concurrent future, whose late answer
    # Ray's data thread would then fail to set (and log as an error).
    return await asyncio.shield(asyncio.wrap_future(pending))


def cancel(ref: ObjectRef[T]) -> None:
    """Ask Ray to cancel the call behind ``ref``; returns at once. Best effort: a call that
    finished, or a connection that is gone, has nothing left to cancel."""
    if not is_client_ref(ref):
        with contextlib.suppress(RayError):
            ray.cancel(ref)
        return
    _executor().submit(_cancel_quietly, ref)


def _cancel_quietly(ref: ObjectRef[T]) -> None:
    # Any error: the client may have lost its connection, and then the call is gone with it.
    with contextlib.suppress(Exception):
        ray.cancel(ref)


async def kill(actor: object, *, no_restart: bool = True) -> None:
    """``ray.kill(actor)`` off the loop (``actor``: a Ray actor handle, typed by whatever
    protocol its owner describes it with). Nothing to do once a client's connection is gone: its
    actors belong to the connection's server on the cluster, which ends with it."""
    if not connected():
        return
    loop = asyncio.get_running_loop()

    def _kill() -> None:
        # RayError/ValueError: already dead; anything else: the connection dropped meanwhile.
        with contextlib.suppress(Exception):
            ray.kill(cast("ActorHandle[object]", actor), no_restart=no_restart)

    await loop.run_in_executor(_executor(), _kill)
