"""The console's actions and reads call the application's commands (``application.deliberations``)
and queries (``application.queries``), the same ones the RPCs call; what they refuse becomes an
HTTP status here, in one table.

"Not found" is not in it: the console's ``not_found_is_404`` middleware answers every one. The
statuses are those the console answered when it went through the gRPC servicer (the RPC's status
code, then an HTTP one), but for the in-flight bound: 429 Too Many Requests, where that table had
no status for RESOURCE_EXHAUSTED and answered 500.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from eventsourcing.persistence import OperationalError
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from aggregates import (
    CouncilStateError,
    DeliberationClosedError,
    InvalidDeliberationError,
    deliberation_id,
)
from application.admission import InFlightBoundError
from application.errors import NotFoundError, QueryRefusedError, ServiceUnavailableError
from fleet import logs
from fleet.telemetry import span
from fleet.web._security import error

log = logging.getLogger(__name__)

HTTP_STATUS: Mapping[type[Exception], int] = {
    InvalidDeliberationError: 400,
    QueryRefusedError: 400,
    DeliberationClosedError: 409,
    CouncilStateError: 409,
    ServiceUnavailableError: 503,
    OperationalError: 503,
    TimeoutError: 504,
    InFlightBoundError: 429,  # the node's bound on open work (named in the message): retry later
}


def _status_for(e: Exception) -> int | None:
    for cls in type(e).__mro__:
        status = HTTP_STATUS.get(cls)
        if status is not None:
            return status
    return None


def as_json(message: Message) -> web.Response:
    """An API message as the console answers it: JSON, field names as in the proto, every field."""
    return web.json_response(
        MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
    )


async def act(name: str, task_id: str, work: Callable[[], Awaitable[Message]]) -> web.Response:
    """Run ``work`` (a command, then its answer as an API message) for the deliberation
    ``task_id`` names ("" when new and unnamed): its log lines carry the deliberation id, a span
    named ``web <name>`` covers it, and a refusal answers its status with the command's message.
    Any other error is a bug: logged whole, answered 500 saying only where to look."""
    d_id = str(deliberation_id(task_id)) if task_id else ""
    try:
        with (
            logs.bind(d_id),
            span(f"web {name}", **{"fleet.task_id": task_id, "fleet.deliberation_id": d_id}),
        ):
            return as_json(await work())
    except Exception as e:
        status = _status_for(e)
        if status is not None:
            return error(status, str(e))
        if isinstance(e, NotFoundError | web.HTTPException):
            raise  # "not found" (the middleware's 404), or an answer already made
        log.exception("%s failed", name)
        return error(500, f"{name}: internal error (see server log)")
