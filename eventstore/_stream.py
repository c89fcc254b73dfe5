"""The async side: one NATS connection, one JetStream stream, conditional appends and reads.

``JetStreamLog`` is the log of one store on one connection, used only on the loop it was opened
on (the factory's loop thread, a writing thread's own loop, or a coroutine's running loop). It
owns its parts, each a class in a module of its own, built in ``__init__`` from only what each
needs, and answers its callers by handing each call to the part that does it:

* ``positions`` (``_positions.py``): the position cache, one ``Positions`` shared by every log of
  the store (a sibling gets its parent's; it has a lock);
* ``reads`` (``_reads.py``, ``Reads``: the connection, the settings, the positions): the read path
  (direct gets, batch and consumer reads, the ordered consumer);
* ``lost_acks`` (``_lost_acks.py``, ``LostAcks``: the same, and the reads it reads back through):
  lost acknowledgements, resolved by sending again and reading back;
* ``writes`` (``_writes.py``, ``Writes``: the same, and the lost-ack resolver): the write path
  (conditional appends, atomic batches, chains), each write sent as ``_publish.py`` sends it;
* ``_records.py``: the values they pass (``StreamSettings``, ``Write``, ``Row``).

Creating or vetting the stream itself (server version, unsafe settings, replicas) happens once, in
``open``, and lives in ``_setup.py``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Coroutine, Sequence

import nats
from nats.aio.client import Client as NATS

from eventstore._lost_acks import LostAcks
from eventstore._positions import Positions
from eventstore._reads import Reads
from eventstore._records import Row, StreamSettings, Write
from eventstore._setup import check_server, ensure_stream
from eventstore._writes import Writes
from natsio import servers

__all__ = ["JetStreamLog"]

_log = logging.getLogger(__name__)


class JetStreamLog:
    """An append-only log of records on one stream, with conditional appends and fast reads.

    Construct with ``await JetStreamLog.open(settings)``; use only on the loop it was opened on.
    """

    def __init__(
        self, nc: NATS, settings: StreamSettings, positions: Positions | None = None
    ) -> None:
        self.nc = nc
        self.settings = settings
        self.positions = positions or Positions()
        self.reads = Reads(nc, settings, self.positions)
        self.lost_acks = LostAcks(nc, settings, self.positions, self.reads)
        self.writes = Writes(nc, settings, self.positions, self.reads, self.lost_acks)

    # ------------------------------------------------------------------ writes
    async def append(self, writes: Sequence[Write], *, optimistic: Callable[[Write], bool]) -> int:
        """Append ``writes`` atomically; return the stream sequence of the last one
        (``Writes.append``)."""
        return await self.writes.append(writes, optimistic=optimistic)

    async def append_each(
        self, units: Sequence[Sequence[Write]], *, optimistic: Callable[[Write], bool]
    ) -> list[int | BaseException]:
        """Append independent units, each atomic on its own; for each, its last sequence or
        its error (``Writes.append_each``)."""
        return await self.writes.append_each(units, optimistic=optimistic)

    # ------------------------------------------------------------------ reads
    async def last(self, subject: str) -> Row | None:
        """The last message on ``subject`` (wildcards allowed), or None (``Reads.last``)."""
        return await self.reads.last(subject)

    async def last_on_subject(self, subject: str) -> Row | None:
        """The last message on one subject; refreshes the cache for it
        (``Reads.last_on_subject``)."""
        return await self.reads.last_on_subject(subject)

    async def read(
        self, subject: str, start: int = 1, *, limit: int | None = None, stop: int | None = None
    ) -> list[Row]:
        """Messages on ``subject`` (wildcards allowed) from sequence ``start``, in order
        (``Reads.read``)."""
        return await self.reads.read(subject, start, limit=limit, stop=stop)

    async def read_subject(self, subject: str, *, after: int = 0) -> list[Row]:
        """The messages on one subject whose position is above ``after``, in order
        (``Reads.read_subject``)."""
        return await self.reads.read_subject(subject, after=after)

    async def consume(
        self, subject: str, start: int, on_msg: Callable[[Row], None]
    ) -> Callable[[], Coroutine[object, object, None]]:
        """Ordered consumer on ``subject`` from sequence ``start``; returns its unsubscribe
        (``Reads.consume``)."""
        return await self.reads.consume(subject, start, on_msg)

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
        return JetStreamLog(nc, self.settings, self.positions)

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
