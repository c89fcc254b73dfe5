"""Reading what a deliberation left in JetStream, raw: the subject, the codec, nothing of ours
that folds or caches, so a test sees exactly what was stored."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import nats

from eventstore._codec import decode


async def stored_events(nats_url: str, stream: str, d_id: UUID) -> list[tuple[str, dict[str, Any]]]:
    """(event class name, its stored state) for every event of one aggregate, in stream order."""
    nc = await nats.connect(nats_url)
    events: list[tuple[str, dict[str, Any]]] = []
    try:
        sub = await nc.jetstream().subscribe(f"{stream}.e.{d_id}", ordered_consumer=True)
        while True:
            try:
                msg = await sub.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                break
            _, _, topic, state = decode(msg.data)
            events.append((topic.rsplit(".", 1)[-1], json.loads(state)))
        await sub.unsubscribe()
    finally:
        await nc.close()
    return events
