"""The async side: one NATS connection, one JetStream stream, conditional appends and reads.

``JetStreamLog`` is the log of one store on one connection, used only on the loop it was opened
on (the factory's loop thread, a writing thread's own loop, or a coroutine's running loop). It is
put together from its parts, each in a module of its own:

* ``_writes.py``: the write path (conditional appends, atomic batches, chains);
* ``_lost_acks.py``: lost acknowledgements, resolved by reading back;
* ``_reads.py``: the read path (direct gets, batch and consumer reads, the ordered consumer);
* ``_positions.py``: the position cache (``Positions``), held, not inherited: one object shared
  by every log of the store (it has a lock);
* ``_records.py``: the values they pass (``StreamSettings``, ``Write``, ``Row``).

Creating or vetting the stream itself (server version, unsafe settings, replicas) happens once, in
``open``, and lives in ``_setup.py``.
"""

from __future__ import annotations

import logging
import re

import nats
from nats.aio.client import Client as NATS

from eventstore._positions import Positions
from eventstore._reads import CONSUMER_READ_MIN
from eventstore._records import StreamSettings
from eventstore._setup import check_server, ensure_stream
from eventstore._writes import Writes
from natsio import servers

__all__ = ["JetStreamLog"]

_log = logging.getLogger(__name__)


class JetStreamLog(Writes):
    """An append-only log of records on one stream, with conditional appends and fast reads.

    Construct with ``await JetStreamLog.open(settings)``; use only on the loop it was opened on.
    """

    def __init__(
        self, nc: NATS, settings: StreamSettings, positions: Positions | None = None
    ) -> None:
        self.nc = nc
        self.settings = settings
        self._positions = positions or Positions()
        self._direct = f"$JS.API.DIRECT.GET.{settings.stream}"
        self._leader_reads = settings.replicas > 1
        self.consumer_read_min = CONSUMER_READ_MIN
        """Pages of at least this many rows are read through a consumer (see read())."""

    # ------------------------------------------------------------------ connections
    @staticmethod
    async def connect(settings: StreamSettings, name: str) -> NATS:
        """A connection as every log of the store makes it."""

        async def on_error(e: Exception) -> None:
            # nats.py's default prints a traceback per failed reconnect attempt.
            _log.warning("NATS %s (%s): %r", _without_password(settings.url), name, e)

        return await nats.connect(
            servers(settings.url),
            connect_timeout=settings.timeout,
            allow_reconnect=True,
            max_reconnect_attempts=-1,  # a restarted server is picked up again
            reconnect_time_wait=0.25,
            # No reconnect buffer: a write attempted while disconnected fails at once
            # (OperationalError) instead of sitting in a buffer and landing after its caller
            # was told it timed out.
            pending_size=0,
            error_cb=on_error,
            name=name,
        )

    async def sibling(self, name: str) -> JetStreamLog:
        """Another log of the same stream on a connection of its own, on the running loop,
        sharing what this one knows (for a thread that writes on its own loop)."""
        nc = await self.connect(self.settings, name)
        return JetStreamLog(nc, self.settings, self._positions)

    @classmethod
    async def open(cls, settings: StreamSettings) -> JetStreamLog:
        """Connect, refuse servers older than 2.12, and create or verify the stream."""
        nc = await cls.connect(settings, f"eventstore:{settings.stream}")
        try:
            check_server(nc, settings)
            settings = await ensure_stream(nc, settings)
        except BaseException:
            await nc.close()
            raise
        return cls(nc, settings)

    async def close(self) -> None:
        if not self.nc.is_closed:
            await self.nc.close()


def _without_password(url: str) -> str:
    """``url`` with any password masked, for logs (``nats://user:secret@host`` → ``user:***``)."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
