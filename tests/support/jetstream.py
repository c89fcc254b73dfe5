"""Writing to a JetStream stream behind the event store's back, for tests of what it reads."""

from __future__ import annotations

import nats


async def append_garbage(nats_url: str, subject: str, data: bytes = b"\xff not an event") -> int:
    """Publish ``data``, which no event store wrote, on ``subject``: its stream sequence."""
    nc = await nats.connect(nats_url)
    try:
        ack = await nc.jetstream().publish(subject, data)
        return int(ack.seq)
    finally:
        await nc.close()
