"""Live updates as server-sent events, from the node's one fan-out of the event feed (``WatchHub``).

A browser never polls the store: each open page holds one HTTP response that the hub's queue
feeds. ``/api/stream`` carries every event (the list and the event tail); ``/api/deliberations/
{task_id}/stream`` carries one deliberation's stored events and then its live ones, with no gap
and no duplicate (``WatchHub.watch``), and ends after its terminal event.

The page reads these with ``fetch`` rather than ``EventSource``, so that it can send the API
token in a header. A comment line every ``KEEPALIVE_S`` notices a browser that went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, TypeVar, cast
from uuid import UUID

from aiohttp import web

from application.timeline import entry
from application.watch import WatchHub, WatchUnavailableError
from fleet.web._present import JsonObject, event_json
from fleet.web._security import HEADERS

if TYPE_CHECKING:
    from application.ports import FleetEvent

KEEPALIVE_S = 15.0

_T = TypeVar("_T")


def feed_json(event: FleetEvent) -> JsonObject:
    """A domain event for the browser: its timeline entry and which deliberation it is of."""
    out = event_json(entry(event))
    out["deliberation_id"] = str(getattr(event, "originator_id", ""))
    return out


async def _open(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    # Set here, not by the middleware: a streamed response's headers go out on prepare.
    response.headers.update(HEADERS)
    await response.prepare(request)
    return response


async def _send(response: web.StreamResponse, data: JsonObject | None) -> None:
    line = ": keep-alive\n\n" if data is None else f"data: {json.dumps(data)}\n\n"
    await response.write(line.encode())


async def _with_keepalive(source: AsyncIterator[_T]) -> AsyncGenerator[_T | None, None]:
    """``source``'s items, and None whenever ``KEEPALIVE_S`` passes without one."""
    it = aiter(source)
    pending: asyncio.Task[_T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(it))
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_S)
            if not done:
                yield None
                continue
            pending = None
            try:
                item = done.pop().result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending


async def stream_all(request: web.Request, hub: WatchHub) -> web.StreamResponse:
    """Every event the node routes, from the moment the page has the response's headers: the
    hub's queue is subscribed before they are sent, so a page that reads its list once the
    stream is open misses nothing in between (the page draws what arrives meanwhile after)."""
    async with hub.subscribe(None) as q:
        response = await _open(request)

        async def events() -> AsyncIterator[object]:  # the hub's events, then its close marker
            while True:
                yield await q.get()

        # Closed at once when the browser goes (not when the collector gets to it): the hub's
        # queue for this page is dropped with it.
        async with contextlib.aclosing(_with_keepalive(events())) as items:
            with contextlib.suppress(ConnectionResetError):
                async for e in items:
                    if e is not None and not hasattr(e, "originator_id"):
                        break  # the hub closed (the node is stopping)
                    await _send(response, None if e is None else feed_json(cast("FleetEvent", e)))
    return response


async def stream_one(request: web.Request, hub: WatchHub, d_id: UUID) -> web.StreamResponse:
    """One deliberation's events, stored then live, ending with its terminal event."""
    response = await _open(request)
    async with contextlib.aclosing(_with_keepalive(hub.watch(d_id))) as items:
        # A stopping node ends the stream; the page says live updates stopped.
        with contextlib.suppress(ConnectionResetError, WatchUnavailableError):
            async for e in items:
                await _send(response, None if e is None else feed_json(e))
            await response.write(b"event: end\ndata: {}\n\n")
    return response
