"""Errors → gRPC status codes, in one table (not a try block in every servicer method)."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import grpc
from eventsourcing.persistence import OperationalError

from aggregates import (
    DeliberationClosedError,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
)
from fleet.ledger import DeliberationNotFoundError
from fleet.queries import QueryRefusedError, ServiceUnavailableError

log = logging.getLogger(__name__)

_STATUS: Mapping[type[Exception], grpc.StatusCode] = {
    InvalidDeliberationError: grpc.StatusCode.INVALID_ARGUMENT,
    QueryRefusedError: grpc.StatusCode.INVALID_ARGUMENT,
    DeliberationNotFoundError: grpc.StatusCode.NOT_FOUND,
    DeliberationClosedError: grpc.StatusCode.FAILED_PRECONDITION,
    DuplicateProposalError: grpc.StatusCode.ALREADY_EXISTS,
    UnknownAgentError: grpc.StatusCode.INVALID_ARGUMENT,
    OperationalError: grpc.StatusCode.UNAVAILABLE,
    ServiceUnavailableError: grpc.StatusCode.UNAVAILABLE,
    TimeoutError: grpc.StatusCode.DEADLINE_EXCEEDED,
}

R = TypeVar("R")


def _status_for(e: Exception) -> grpc.StatusCode | None:
    for cls in type(e).__mro__:
        code = _STATUS.get(cls)  # type: ignore[call-overload]
        if code is not None:
            return code
    return None


async def _abort(context: grpc.aio.ServicerContext[Any, Any], e: Exception, method: str) -> None:
    code = _status_for(e)
    if code is None:
        # An internal error: log it whole, tell the caller only that it happened and where to look.
        log.exception("%s failed", method)
        await context.abort(grpc.StatusCode.INTERNAL, f"{method}: internal error (see server log)")
    else:
        await context.abort(code, str(e))


def translated(
    fn: Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[R]]:
    """Wrap a unary servicer method so domain errors become the right status code."""

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> R:
        try:
            return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            await _abort(context, e, fn.__name__)
            raise  # unreachable: abort raises

    return wrapper


def translated_stream(
    fn: Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[R]]:
    """The same for server-streaming methods."""

    @functools.wraps(fn)
    async def wrapper(
        self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[R]:
        try:
            async for item in fn(self, request, context):
                yield item
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            await _abort(context, e, fn.__name__)

    return wrapper
