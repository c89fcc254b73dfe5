"""NATS errors, translated once into the PEP 249 hierarchy of eventsourcing.persistence.

Callers of a recorder (the library's Application, projection runners, Fleet's handlers) know
``IntegrityError`` (someone else wrote that version first), ``OperationalError`` (the server is
unreachable or slow: retry later) and ``DatabaseError`` (anything else). They never see nats.py
exception types.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from eventsourcing.persistence import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    PersistenceError,
)
from nats.errors import (
    ConnectionClosedError,
    NoRespondersError,
    NoServersError,
    OutboundBufferLimitError,
)
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import APIError

__all__ = [
    "CONFLICT_CODES",
    "WRONG_LAST_SEQUENCE",
    "OutcomeUnknownError",
    "WrongLastSequence",
    "api_error",
    "check_reply",
    "translate",
]

WRONG_LAST_SEQUENCE: Final = 10071
"""``Nats-Expected-Last-Subject-Sequence`` did not match: another writer got there first."""
BATCH_DUPLICATE_CHECK: Final = 10164
"""Two expected-last-subject-sequence checks on one subject inside one atomic batch."""
CONFLICT_CODES: Final = frozenset({WRONG_LAST_SEQUENCE, BATCH_DUPLICATE_CHECK})


class WrongLastSequence(IntegrityError):
    """Error 10071: the subject's last sequence moved. The writer may refresh and decide again."""


class OutcomeUnknownError(OperationalError):
    """A write was sent, its acknowledgement was lost, and the server stayed unreachable for the
    whole resolution window: it may or may not be stored. Read the aggregate back before retrying.
    (Retrying the same save through the application is safe: it either lands once or conflicts.)
    """


def api_error(
    err_code: int | None, code: int | None, description: str, where: str
) -> DatabaseError:
    """The persistence error for a JetStream API error response.

    A 503 (no leader yet, the cluster electing one) is an ``OperationalError``: the request was
    fine and the same one succeeds once the cluster is back, so a caller may wait and retry.
    """
    msg = f"JetStream error {err_code} ({code}) on {where}: {description}"
    if code == 503:
        return OperationalError(msg)
    if err_code == WRONG_LAST_SEQUENCE:
        return WrongLastSequence(msg)
    if err_code in CONFLICT_CODES:
        return IntegrityError(msg)
    return DatabaseError(msg)


def check_reply(data: bytes, where: str) -> dict[str, Any]:
    """Parse a JetStream API reply (a PubAck or an error) and raise on error."""
    try:
        reply: dict[str, Any] = json.loads(data)
    except ValueError as e:
        msg = f"unreadable JetStream reply on {where}: {data[:200]!r}"
        raise DatabaseError(msg) from e
    err = reply.get("error")
    if err:
        raise api_error(err.get("err_code"), err.get("code"), err.get("description", ""), where)
    return reply


def translate(exc: BaseException, *, url: str, where: str) -> PersistenceError:
    """Map an exception raised while talking to NATS to a persistence error.

    Args:
        exc: what nats.py (or the bridge) raised.
        url: the server URL, so an operator reading "unreachable" knows which server.
        where: the subject or operation, for the message.
    """
    if isinstance(exc, PersistenceError):
        return exc
    if isinstance(exc, APIError):
        return api_error(exc.err_code, exc.code, str(exc.description), where)
    unreachable = (
        NatsTimeoutError,
        NoServersError,
        ConnectionClosedError,
        NoRespondersError,
        OutboundBufferLimitError,  # disconnected, and we keep no reconnect buffer
        asyncio.TimeoutError,
        TimeoutError,
        OSError,
    )
    if isinstance(exc, unreachable):
        kind = type(exc).__name__
        return OperationalError(f"NATS at {url} unreachable or too slow ({kind}) on {where}")
    if isinstance(exc, NatsError):
        return DatabaseError(f"NATS error on {where} at {url}: {exc!r}")
    return DatabaseError(f"unexpected error on {where} at {url}: {exc!r}")
