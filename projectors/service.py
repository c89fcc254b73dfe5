"""The projections, served to the Fleet processes that do not hold them, over NATS request/reply.

Why: the embedded graph (LadybugDB) is a directory that one process alone may open, the one that
runs the projectors. An API replica (``fleet up --components api``) that opened a graph of its own
would serve a private, empty one: ``fleet list`` and ``fleet query`` answering 0 deliberations,
and ``fleet verify`` comparing nothing and calling it clean. So a node that runs the projectors
answers, for its event stream, read-only Cypher (the API's QueryHistory, listings and open count),
projection status, rebuild and verify; a replica asks it, on the NATS connection every Fleet
process has anyway: no port to open, nothing to discover (the subject is named after the stream).

Wire: subject ``fleet.projections.<stream>.<op>`` (``query``, ``status``, ``rebuild``,
``verify``) in queue group ``fleet-projections``, so one projectors node answers each request (a
standby on its own embedded graph holds a complete projection too). Requests and replies are
JSON. A reply is cut into parts that fit the server's payload limit, each headed ``Fleet-Part:
i/n`` and published in order to the requester's inbox. An error travels as ``{"error": {"kind",
"message"}}`` and is raised again, as the same class, where the request was made.

When no node serves the stream, NATS answers "no responders" at once and the request fails with
``ServiceUnavailableError`` naming the subject and what to run (gRPC UNAVAILABLE): never an empty
answer. A node that does not answer within the request's time fails it the same way.

Loop affinity: the service and the requester live on the loop of their NATS connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from typing import Any, Protocol

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from application.errors import ServiceUnavailableError
from application.ports import HistoryGraph
from natsio import Responder
from projectors.control import Projections, ProjectionStatus
from projectors.errors import (
    InvalidQueryError,
    NothingToVerifyError,
    QueryTimeoutError,
    ReadOnlyQueryError,
    UnknownProjectionError,
)
from projectors.graph.port import DEFAULT_LIMIT, DEFAULT_QUERY_TIMEOUT_S
from projectors.verify import Difference, VerifyReport

__all__ = [
    "LocalProjections",
    "ProjectionControl",
    "ProjectionRequester",
    "ProjectionService",
    "RemoteGraph",
    "RemoteProjectionError",
    "RemoteProjections",
    "subject",
]

log = logging.getLogger(__name__)

SUBJECT_PREFIX = "fleet.projections"
QUEUE_GROUP = "fleet-projections"
PART_HEADER = "Fleet-Part"
_NO_RESPONDERS = "503"
_PART_SLACK = 4096
"""Bytes of a message left for its subject and headers when a reply is cut into parts."""
QUERY_SLACK_S = 5.0
"""A remote query may take its time limit plus this (the round trip, a busy projectors node)."""
STATUS_TIMEOUT_S = 10.0
REBUILD_TIMEOUT_S = 60.0
VERIFY_TIMEOUT_S = 600.0
"""How long a verify is waited for when the caller set no deadline (the CLI's default too)."""

_ERRORS: Mapping[str, type[Exception]] = {
    # Subclasses before their bases: the first match names the kind.
    "timeout": QueryTimeoutError,
    "read_only": ReadOnlyQueryError,
    "invalid": InvalidQueryError,
    "unknown_projection": UnknownProjectionError,
    "nothing_to_verify": NothingToVerifyError,
}


class RemoteProjectionError(RuntimeError):
    """The projectors node failed on a request for a reason of its own (its log has it)."""


def subject(stream: str, op: str) -> str:
    """Where requests ``op`` about the projections of event stream ``stream`` go."""
    return f"{SUBJECT_PREFIX}.{stream.lower()}.{op}"


def _kind(e: Exception) -> str:
    return next(kind for kind, cls in _ERRORS.items() if isinstance(e, cls))


# ---------------------------------------------------------------- the node that holds them


class ProjectionService:
    """Answers projection requests with this node's graph and projections.

    Each request runs in a task of its own (a verify takes seconds; queries go on meanwhile),
    and its blocking work on a worker thread.
    """

    def __init__(
        self, nc: NATS, stream: str, graph: HistoryGraph, projections: Projections
    ) -> None:
        self._nc = nc
        self._stream = stream
        self._graph = graph
        self._projections = projections
        self._responder = Responder(nc, subject(stream, "*"), QUEUE_GROUP, self._answer)
        self._handlers: Mapping[str, Callable[[Mapping[str, object]], Awaitable[object]]] = {
            "query": self._query,
            "status": self._status,
            "rebuild": self._rebuild,
            "verify": self._verify,
        }

    async def start(self) -> None:
        await self._responder.start()  # subscribed at the server before anyone is told we serve
        log.info("serving the projections of %s on %s", self._stream, self._responder.subject)

    async def close(self) -> None:
        """Stop taking requests and end those in flight (their requesters time out). Idempotent."""
        await self._responder.close()

    async def _answer(self, msg: Msg) -> None:
        op = msg.subject.rsplit(".", 1)[-1]
        payload: dict[str, object]
        try:
            handler = self._handlers.get(op)
            if handler is None:
                raise InvalidQueryError(f"no projection request {op!r}")
            body = json.loads(msg.data or b"{}")
            if not isinstance(body, dict):
                raise InvalidQueryError(f"{op}: the request is not a JSON object")
            payload = {"ok": await handler(body)}
        except tuple(_ERRORS.values()) as e:
            payload = {"error": {"kind": _kind(e), "message": str(e)}}
        except Exception as e:
            log.exception("projection request %s failed", op)
            message = f"{op} failed on the projectors node: {type(e).__name__} (see its log)"
            payload = {"error": {"kind": "internal", "message": message}}
        if msg.reply:
            await self._reply(msg.reply, json.dumps(payload, default=str).encode())

    async def _reply(self, inbox: str, data: bytes) -> None:
        size = max(1024, self._nc.max_payload - _PART_SLACK)
        parts = [data[i : i + size] for i in range(0, len(data), size)]
        for i, part in enumerate(parts, start=1):
            await self._nc.publish(inbox, part, headers={PART_HEADER: f"{i}/{len(parts)}"})

    async def _query(self, body: Mapping[str, object]) -> list[dict[str, Any]]:
        cypher, params = body.get("cypher"), body.get("params") or {}
        limit, timeout_s = body.get("limit", DEFAULT_LIMIT), body.get("timeout_s")
        if not isinstance(cypher, str) or not isinstance(params, dict):
            raise InvalidQueryError("query: cypher must be a string and params an object")
        if not isinstance(limit, int) or not isinstance(timeout_s, int | float | None):
            raise InvalidQueryError("query: limit must be an integer and timeout_s a number")
        return await asyncio.to_thread(
            self._graph.query, cypher, params, limit, timeout_s=timeout_s
        )

    async def _status(self, body: Mapping[str, object]) -> dict[str, object]:
        head, rows = await asyncio.to_thread(self._projections.status)
        return {"head": head, "projections": [asdict(r) for r in rows]}

    async def _rebuild(self, body: Mapping[str, object]) -> int:
        return await asyncio.to_thread(self._projections.rebuild, str(body.get("name", "")))

    async def _verify(self, body: Mapping[str, object]) -> dict[str, object]:
        return asdict(await asyncio.to_thread(self._projections.verify))


# ---------------------------------------------------------------- the nodes that ask


class ProjectionRequester:
    """Sends projection requests for one event stream and gathers their replies."""

    def __init__(self, nc: NATS, stream: str) -> None:
        self._nc = nc
        self._stream = stream

    async def request(self, op: str, body: Mapping[str, object], *, timeout: float) -> Any:
        """The ``ok`` part of the reply to ``op``: JSON of that op's own shape, which its caller
        reads (hence ``Any``).

        Raises:
            ServiceUnavailableError: no node serves this stream's projections, or none answered
                within ``timeout`` seconds.
            RemoteProjectionError: the serving node failed (its log says why).
            and the projection errors the serving node raised (``_ERRORS``), as they were.
        """
        to = subject(self._stream, op)
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(inbox)
        try:
            await self._nc.publish(to, json.dumps(body).encode(), reply=inbox)
            data = await self._gather(sub, to, op, timeout)
        finally:
            await sub.unsubscribe()
        payload = json.loads(data)
        error = payload.get("error")
        if error is not None:
            cls = _ERRORS.get(str(error.get("kind")), RemoteProjectionError)
            raise cls(str(error.get("message")))
        return payload.get("ok")

    async def _gather(self, sub: Subscription, to: str, op: str, timeout: float) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        parts: dict[int, bytes] = {}
        total = 1
        while len(parts) < total:
            try:
                msg = await sub.next_msg(timeout=max(0.001, deadline - loop.time()))
            except nats.errors.TimeoutError:
                text = (
                    f"no node serving the projections of stream {self._stream} answered {op} "
                    f"within {timeout:g} s (on {to})"
                )
                raise ServiceUnavailableError(text) from None
            headers = msg.headers or {}
            if headers.get("Status") == _NO_RESPONDERS:
                text = (
                    f"no node serves the projections of stream {self._stream} (nothing listens "
                    f"on {to}): start one with `fleet up --components projectors` on this "
                    "stream, or configure a graph every process reaches (NEO4J_URI)"
                )
                raise ServiceUnavailableError(text)
            index, _, count = headers.get(PART_HEADER, "1/1").partition("/")
            total = int(count)
            parts[int(index)] = msg.data
        return b"".join(parts[i] for i in range(1, total + 1))


class RemoteGraph:
    """``GraphReader`` on the graph a projectors node holds (``ProjectionService``)."""

    def __init__(self, requester: ProjectionRequester) -> None:
        self._requester = requester

    async def query(
        self,
        cypher: str,
        params: Mapping[str, object] | None = None,
        limit: int = DEFAULT_LIMIT,
        *,
        timeout_s: float | None = None,
    ) -> list[dict[str, Any]]:
        body = {"cypher": cypher, "params": dict(params or {}), "limit": limit}
        body["timeout_s"] = timeout_s
        wait = (timeout_s if timeout_s is not None else DEFAULT_QUERY_TIMEOUT_S) + QUERY_SLACK_S
        rows = await self._requester.request("query", body, timeout=wait)
        return [dict(r) for r in rows]


class ProjectionControl(Protocol):
    """What the API asks of the projections: where they stand, a rebuild, a verification."""

    async def status(self) -> tuple[int, list[ProjectionStatus]]: ...

    async def rebuild(self, name: str) -> int: ...

    async def verify(self, timeout_s: float | None = None) -> VerifyReport:
        """``timeout_s``: how long the caller waits (the RPC's deadline); None: no deadline."""
        ...


class LocalProjections:
    """``ProjectionControl`` over this node's ``Projections``, on worker threads."""

    def __init__(self, projections: Projections) -> None:
        self.projections = projections

    async def status(self) -> tuple[int, list[ProjectionStatus]]:
        return await asyncio.to_thread(self.projections.status)

    async def rebuild(self, name: str) -> int:
        return await asyncio.to_thread(self.projections.rebuild, name)

    async def verify(self, timeout_s: float | None = None) -> VerifyReport:
        return await asyncio.to_thread(self.projections.verify)


class RemoteProjections:
    """``ProjectionControl`` for a node that runs no projectors: status and rebuild are asked of
    the node that runs them; verify too, unless ``local`` can read every store itself (Neo4j and
    a shared Valkey), which then compares them here, with or without a projectors node up."""

    def __init__(self, requester: ProjectionRequester, local: Projections | None = None) -> None:
        self._requester = requester
        self._local = local

    async def status(self) -> tuple[int, list[ProjectionStatus]]:
        got = await self._requester.request("status", {}, timeout=STATUS_TIMEOUT_S)
        return int(got["head"]), [ProjectionStatus(**r) for r in got["projections"]]

    async def rebuild(self, name: str) -> int:
        body = {"name": name}
        return int(await self._requester.request("rebuild", body, timeout=REBUILD_TIMEOUT_S))

    async def verify(self, timeout_s: float | None = None) -> VerifyReport:
        if self._local is not None:
            return await asyncio.to_thread(self._local.verify)
        wait = VERIFY_TIMEOUT_S if timeout_s is None else timeout_s
        got = await self._requester.request("verify", {}, timeout=wait)
        report = VerifyReport(**{k: v for k, v in got.items() if k != "differences"})
        report.differences = [Difference(**d) for d in got["differences"]]
        return report
