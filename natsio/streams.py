"""Creating the streams Fleet owns, safely: made when absent, replicas raised and never lowered.

Every stream Fleet creates outside the event store (the agent queue's work and results, the
dispatchers' work queue, the planning and dead-letter streams) goes through ``ensure_stream``, so
they all follow ``FLEET_STREAM_REPLICAS`` by one rule. The event stream has stricter checks of its
own (``eventstore._setup``: no limits, deny delete and purge).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nats.js.api import StreamConfig
from nats.js.errors import APIError, BadRequestError, NotFoundError

from natsio.errors import NatsPlumbingError

__all__ = ["StreamSetupError", "checked_replicas", "ensure_stream"]

log = logging.getLogger(__name__)

_STREAM_EXISTS = 10058
"""JetStream's "stream name already in use with a different configuration"."""


class StreamSetupError(NatsPlumbingError):
    """A stream of the NATS backend could not be created or brought to its replica count."""


async def ensure_stream(js: Any, config: StreamConfig, *, timeout_s: float = 20.0) -> None:
    """Create ``config``'s stream when absent; raise an existing one's replicas to
    ``config.num_replicas``, never lower them (the event store's rule too).

    More copies only make the stream safer, and the server moves the data itself. Fewer is never
    done here: a process started without ``FLEET_STREAM_REPLICAS`` (a ``fleet worker`` on a
    laptop against production, say) must not scale an R3 stream down to R1. Nothing else of an
    existing stream is changed: it may be an operator's. After a raise, this waits until the
    stream has a leader with every replica, so the first publish is not refused mid-election.

    Raises:
        StreamSetupError: the server refused to create or update the stream (e.g. more
            replicas than the cluster has servers), or no leader came within ``timeout_s``.
    """
    want = config.num_replicas or 1
    try:
        try:
            info = await js.stream_info(config.name)
        except NotFoundError:
            try:
                await js.add_stream(config)
                return
            except BadRequestError as e:
                if e.err_code != _STREAM_EXISTS:  # not "another process created it meanwhile"
                    raise
                info = await js.stream_info(config.name)
        have = info.config.num_replicas or 1
        if have >= want:
            return
        await js.update_stream(info.config.evolve(num_replicas=want))
    except APIError as e:
        msg = (
            f"stream {config.name} with {want} replica(s) (FLEET_STREAM_REPLICAS): "
            f"JetStream error {e.err_code}: {e.description}"
        )
        raise StreamSetupError(msg) from e
    name = str(config.name)  # set on every config built here; StreamConfig types it optional
    log.warning("stream %s: replicas raised from %d to %d", name, have, want)
    await _await_replicas(js, name, want, timeout_s)


async def _await_replicas(js: Any, name: str, replicas: int, timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        cluster = (await js.stream_info(name)).cluster
        if cluster is not None and cluster.leader and len(cluster.replicas or []) + 1 >= replicas:
            return
        await asyncio.sleep(0.05)
    raise StreamSetupError(f"stream {name}: no leader with {replicas} replicas in {timeout_s} s")


def checked_replicas(replicas: int) -> int:
    """``replicas`` if JetStream accepts it (1 to 5), else a ValueError naming the setting."""
    # JetStream's own bound, said here in our words rather than as a server error at start-up.
    if not 1 <= replicas <= 5:
        raise ValueError(f"stream replicas must be 1 to 5 (FLEET_STREAM_REPLICAS), not {replicas}")
    return replicas
