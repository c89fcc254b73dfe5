"""Running a servicer method in process, for the console: the RPC's own validation, errors and
logging, with its status turned into an HTTP one.

The console's actions are the API's actions; calling the servicer method (not a copy of its
body) keeps one definition of what a Deliberate, a Cancel or an ApprovePlan does and refuses.
The method's context is ``_Context``: ``abort`` raises ``WebRefused`` with the status it names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar, cast

import grpc

from fleet.grpc._errors import Ctx

Q = TypeVar("Q")
R = TypeVar("R")

HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNIMPLEMENTED: 501,
}
CALL_BUDGET_S = 60.0
"""What ``time_remaining`` answers (VerifyProjections sizes its work by it)."""


class WebRefused(Exception):
    """The servicer refused the call: ``http_status`` and the RPC's own message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = HTTP_STATUS.get(code, 500)


class _Context:
    """The little of ``grpc.aio.ServicerContext`` the servicer methods use."""

    async def abort(self, code: grpc.StatusCode, details: str = "") -> NoReturn:
        raise WebRefused(code, details)

    def time_remaining(self) -> float:
        return CALL_BUDGET_S

    def invocation_metadata(self) -> tuple[()]:
        return ()


async def call(method: Callable[[Q, Ctx], Awaitable[R]], request: Q) -> R:
    """``await method(request, context)``; raises ``WebRefused`` when the RPC would fail."""
    return await method(request, cast("Ctx", _Context()))  # the part of a context servicers use
