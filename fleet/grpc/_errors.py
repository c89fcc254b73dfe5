"""Errors → gRPC status codes, in one table (not a try block in every servicer method)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeAlias, TypeVar

import grpc
from eventsourcing.persistence import OperationalError

from aggregates import (
    CouncilStateError,
    DeliberationClosedError,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
    deliberation_id,
)
from application.admission import InFlightBoundError
from application.errors import NotFoundError, QueryRefusedError, ServiceUnavailableError
from application.watch import WatchUnavailableError
from dispatchers.derivation import DerivationUnavailableError
from fleet import logs
from fleet.telemetry import span
from projectors.errors import NothingToVerifyError, UnknownProjectionError

log = logging.getLogger(__name__)

Ctx: TypeAlias = grpc.aio.ServicerContext[Any, Any]
"""A servicer method's context (grpc's stubs leave its request and response types open)."""

_STATUS: Mapping[type[Exception], grpc.StatusCode] = {
    InvalidDeliberationError: grpc.StatusCode.INVALID_ARGUMENT,
    QueryRefusedError: grpc.StatusCode.INVALID_ARGUMENT,
    NotFoundError: grpc.StatusCode.NOT_FOUND,
    DeliberationClosedError: grpc.StatusCode.FAILED_PRECONDITION,
    CouncilStateError: grpc.StatusCode.FAILED_PRECONDITION,
    DuplicateProposalError: grpc.StatusCode.ALREADY_EXISTS,
    UnknownAgentError: grpc.StatusCode.INVALID_ARGUMENT,
    OperationalError: grpc.StatusCode.UNAVAILABLE,
    ServiceUnavailableError: grpc.StatusCode.UNAVAILABLE,
    NothingToVerifyError: grpc.StatusCode.UNAVAILABLE,
    UnknownProjectionError: grpc.StatusCode.INVALID_ARGUMENT,
    WatchUnavailableError: grpc.StatusCode.UNAVAILABLE,
    DerivationUnavailableError: grpc.StatusCode.UNAVAILABLE,
    TimeoutError: grpc.StatusCode.DEADLINE_EXCEEDED,
    InFlightBoundError: grpc.StatusCode.RESOURCE_EXHAUSTED,
}

R = TypeVar("R")
S = TypeVar("S")
Q = TypeVar("Q")


def _status_for(e: Exception) -> grpc.StatusCode | None:
    for cls in type(e).__mro__:
        code = _STATUS.get(cls)
        if code is not None:
            return code
    return None


async def _abort(context: Ctx, e: Exception, method: str) -> None:
    code = _status_for(e)
    if code is None:
        # An internal error: log it whole, tell the caller only that it happened and where to look.
        log.exception("%s failed", method)
        await context.abort(grpc.StatusCode.INTERNAL, f"{method}: internal error (see server log)")
    else:
        await context.abort(code, str(e))


def _about(request: object) -> tuple[str, str]:
    """(task id, deliberation id) a request is about, or empty strings."""
    task = str(getattr(request, "task_id", "") or "")
    return task, str(deliberation_id(task)) if task else ""


def translated(
    fn: Callable[[S, Q, Ctx], Awaitable[R]],
) -> Callable[[S, Q, Ctx], Awaitable[R]]:
    """Wrap a unary servicer method so domain errors become the right status code.

    It also opens the call's span and binds the deliberation id for the call's log lines.
    """

    @functools.wraps(fn)
    async def wrapper(self: S, request: Q, context: Ctx) -> R:
        task, d_id = _about(request)
        try:
            with (
                logs.bind(d_id),
                span(
                    f"rpc {fn.__name__}", **{"fleet.task_id": task, "fleet.deliberation_id": d_id}
                ),
            ):
                return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            await _abort(context, e, fn.__name__)
            raise  # unreachable: abort raises

    return wrapper


def translated_stream(
    fn: Callable[[S, Q, Ctx], AsyncIterator[R]],
) -> Callable[[S, Q, Ctx], AsyncIterator[R]]:
    """The same for server-streaming methods."""

    @functools.wraps(fn)
    async def wrapper(self: S, request: Q, context: Ctx) -> AsyncIterator[R]:
        _, d_id = _about(request)
        # No span across a stream (it may last minutes); the log context covers its lines.
        token = logs.deliberation_context.set(d_id)
        try:
            async for item in fn(self, request, context):
                yield item
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            await _abort(context, e, fn.__name__)
        finally:
            with contextlib.suppress(ValueError):  # finalised in another context
                logs.deliberation_context.reset(token)

    return wrapper
