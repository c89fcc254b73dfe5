"""Waiting on a condition instead of sleeping a fixed time.

A check is called every ``interval`` seconds until it returns something truthy, which is
returned; after ``timeout`` seconds the wait fails with an ``AssertionError`` that names what was
awaited and the last value seen. ``ignoring`` lists exceptions that mean "not yet" (a server that
is still starting, a consumer not created yet): they are retried, and the last one is chained
when the wait fails.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, cast, overload

if TYPE_CHECKING:
    from uuid import UUID

    from aggregates import Deliberation
    from application.stores import ApplicationDeliberationStore

T = TypeVar("T")

Message = str | Callable[[], str]


def _failure(what: Message, timeout: float, last: object, error: BaseException | None) -> str:
    text = what() if callable(what) else what
    seen = f"raised {error!r}" if error is not None else f"last value {last!r}"
    return f"{text}: not within {timeout:g} s ({seen})"


@overload
async def eventually(
    check: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,
    interval: float = ...,
    what: Message = ...,
    ignoring: tuple[type[BaseException], ...] = ...,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T],
    *,
    timeout: float = ...,
    interval: float = ...,
    what: Message = ...,
    ignoring: tuple[type[BaseException], ...] = ...,
) -> T: ...


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: Message = "condition never held",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Await until ``check()`` (sync or async) returns something truthy, and return it.

    Raises:
        AssertionError: ``check`` stayed falsy (or raised one of ``ignoring``) for ``timeout``
            seconds; the message says ``what`` and the last value or error.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            got = check()
            if inspect.isawaitable(got):
                got = await got
            error = None
            if got:
                return cast(T, got)
            last = got
        except ignoring as e:
            error = e
        if loop.time() >= deadline:
            raise AssertionError(_failure(what, timeout, last, error)) from error
        await asyncio.sleep(interval)


def eventually_sync(
    check: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    what: Message = "condition never held",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """`eventually` for a test with no event loop: blocks this thread between checks."""
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            got = check()
            error = None
            if got:
                return got
            last = got
        except ignoring as e:
            error = e
        if time.monotonic() >= deadline:
            raise AssertionError(_failure(what, timeout, last, error)) from error
        time.sleep(interval)


async def until_terminal(
    store: ApplicationDeliberationStore, deliberation_id: UUID, *, timeout: float = 5.0
) -> Deliberation:
    """The deliberation once it has reached a terminal status, read through ``store``."""

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await store.get(deliberation_id)
        if got.is_terminal:
            return got
        if loop.time() > deadline:
            raise AssertionError(
                f"{deliberation_id} never reached a terminal state within {timeout} s "
                f"(status {got.status.value})"
            )
        await asyncio.sleep(0.01)
