"""Where Fleet parks what it cannot process: one dead-letter stream per installation.

The NATS agent backend's workers and the plan-approval consumer park bad or exhausted messages
on ``fleet.deadletter.<source>…`` with the reason in a header, so an operator finds every dead
letter in one stream, whichever part refused it.
"""

from __future__ import annotations

from nats.js.api import StorageType, StreamConfig

from natsio.streams import checked_replicas

__all__ = ["DEAD_LETTER_PREFIX", "DEAD_LETTER_STREAM", "dead_letter_stream_config"]

DEAD_LETTER_STREAM = "FLEET_DEADLETTER"
"""The installation's dead-letter stream (``fleet.deadletter.>``), shared by every consumer."""
DEAD_LETTER_PREFIX = "fleet.deadletter"


def dead_letter_stream_config(replicas: int = 1, name: str = DEAD_LETTER_STREAM) -> StreamConfig:
    """The installation's dead-letter stream (every ``fleet.deadletter.>`` subject)."""
    return StreamConfig(
        name=name,
        subjects=[f"{DEAD_LETTER_PREFIX}.>"],
        storage=StorageType.FILE,
        num_replicas=checked_replicas(replicas),
    )
