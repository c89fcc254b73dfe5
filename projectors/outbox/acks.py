"""JetStream publishes sent without waiting for each acknowledgement, their acks collected after.

One connection sends in order and JetStream handles one connection's publishes to a stream in
the order they arrive, so a window of publishes costs one round trip instead of one each. The
outbox needs that and the answer to each: whether it was stored, refused, or a duplicate.

nats-py's ``js.publish_async`` is not used: its reply handler *raises* a refusal
(``APIError.from_error`` raises rather than returns), so the future of a refused publish is
never resolved and the caller waits forever. Here every reply settles its future, with a
``PubAck`` or with the ``APIError`` it carries.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import PubAck
from nats.js.errors import APIError, NoStreamResponseError

__all__ = ["AckWindow"]

_NO_RESPONDERS = "503"


class AckWindow:
    """Sends JetStream publishes on ``nc`` and waits for their acks together.

    Lives on the loop of ``nc`` (every method is a coroutine run there); one window at a time.
    """

    def __init__(self, nc: NATS) -> None:
        self._nc = nc
        self._prefix = ""
        self._pending: dict[str, asyncio.Future[PubAck]] = {}
        self._next = 0

    async def send(
        self, subject: str, body: bytes, headers: Mapping[str, str]
    ) -> asyncio.Future[PubAck]:
        """Publish now (behind anything sent before on this connection); the ack comes later."""
        if not self._prefix:
            self._prefix = self._nc.new_inbox()
            await self._nc.subscribe(f"{self._prefix}.*", cb=self._on_reply)
        self._next += 1
        token = str(self._next)
        future: asyncio.Future[PubAck] = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        try:
            await self._nc.publish(
                subject, body, reply=f"{self._prefix}.{token}", headers=dict(headers)
            )
        except BaseException:
            self._pending.pop(token, None)
            raise
        return future

    async def settle(
        self, futures: Sequence[asyncio.Future[PubAck]], *, timeout: float
    ) -> list[PubAck | BaseException]:
        """Each publish's ack or error, in the order sent.

        Raises:
            TimeoutError: some acks did not come within ``timeout`` (those publishes may still
                land: the caller re-reads the stream rather than guessing).
        """
        try:
            async with asyncio.timeout(timeout):
                return list(await asyncio.gather(*futures, return_exceptions=True))
        finally:  # one window at a time: whatever is still pending is this one's, given up
            for future in self._pending.values():
                future.cancel()
            self._pending.clear()

    async def _on_reply(self, msg: Msg) -> None:
        future = self._pending.pop(msg.subject[len(self._prefix) + 1 :], None)
        if future is None or future.done():
            return  # a window given up on (timed out) answered late
        if msg.headers and msg.headers.get("Status") == _NO_RESPONDERS:
            future.set_exception(NoStreamResponseError())
            return
        try:
            resp: dict[str, Any] = json.loads(msg.data)
        except ValueError as e:
            future.set_exception(APIError(description=f"unreadable publish ack: {e}"))
            return
        if "error" in resp:
            future.set_exception(_api_error(resp["error"]))
        else:
            future.set_result(PubAck.from_response(resp))


def _api_error(err: Mapping[str, Any]) -> APIError:
    """The error a reply carries, as nats-py's ``APIError`` (built, not raised)."""
    return APIError(
        code=err.get("code"), err_code=err.get("err_code"), description=err.get("description")
    )
