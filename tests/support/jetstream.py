"""Writing to a JetStream stream behind the event store's back, and slowing its consumers'
starts, for tests of what it reads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import nats
import pytest

from eventstore._records import Row
from eventstore._stream import JetStreamLog
from eventstore.jetstream import JetStreamFactory


@dataclass(frozen=True)
class Sent:
    """One message the store sent (``spy_publishes``)."""

    subject: str
    headers: dict[str, str]
    taken_in: int
    """How many messages the connection had taken in when it went out: a reply taken in
    between two sends moves it."""


def spy_publishes(factory: JetStreamFactory, wanted: Callable[[str], bool]) -> list[Sent]:
    """Every message the store sends from now on to a subject ``wanted`` accepts, published or
    requested, in the order sent (the list fills as they go)."""
    nc = factory.connection.log.nc
    seen: list[Sent] = []
    real_publish, real_request = nc.publish, nc.request

    def note(subject: str, kw: dict[str, Any]) -> None:
        if wanted(subject):
            seen.append(Sent(subject, dict(kw.get("headers") or {}), nc.stats["in_msgs"]))

    async def publish(subject: str, payload: bytes = b"", **kw: Any) -> Any:
        note(subject, kw)
        return await real_publish(subject, payload, **kw)

    async def request(subject: str, payload: bytes = b"", timeout: float = 0.5, **kw: Any) -> Any:
        note(subject, kw)
        return await real_request(subject, payload, timeout, **kw)

    nc.publish = publish  # type: ignore[method-assign,assignment]
    nc.request = request  # type: ignore[method-assign,assignment]
    return seen


async def append_garbage(nats_url: str, subject: str, data: bytes = b"\xff not an event") -> int:
    """Publish ``data``, which no event store wrote, on ``subject``: its stream sequence."""
    nc = await nats.connect(nats_url)
    try:
        ack = await nc.jetstream().publish(subject, data)
        return int(ack.seq)
    finally:
        await nc.close()


@dataclass
class LateConsumers:
    """Every consumer the store makes, each returned 0.3 s after the server made it (a slow
    reply to ``subscribe``): rows flow meanwhile, as they do before the reply in any case."""

    starts: list[int] = field(default_factory=list)  # the sequence each was made at
    running: set[int] = field(default_factory=set)  # made and not stopped, by their start


def late_consumers(monkeypatch: pytest.MonkeyPatch) -> LateConsumers:
    """Slow every consumer's start for the rest of the test, and count them (the window in
    which a subscription's bound can be crossed before it knows its consumer)."""
    seen = LateConsumers()
    real = JetStreamLog.consume

    async def late(
        self: JetStreamLog, subject: str, start: int, on_msg: Callable[[Row], None]
    ) -> Callable[[], Coroutine[object, object, None]]:
        stop = await real(self, subject, start, on_msg)
        seen.starts.append(start)
        seen.running.add(start)
        await asyncio.sleep(0.3)

        async def stopped() -> None:
            seen.running.discard(start)
            await stop()

        return stopped

    monkeypatch.setattr(JetStreamLog, "consume", late)
    return seen
