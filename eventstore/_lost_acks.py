"""Lost acknowledgements, resolved and never guessed.

When a write's reply times out, or the connection drops under it, the same conditional write is
sent again with the same expected sequence, so it cannot land twice. If the server refuses it
(10071), we read the message right after the expected sequence from the stream leader: our own
bytes mean the first attempt landed (success); anything else means another writer won
(IntegrityError). Only when the server stays unreachable for the whole resolution window does the
caller get ``OutcomeUnknownError`` (an OperationalError saying the write may have landed) or, when
nothing could have been sent, a plain OperationalError saying nothing was written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

from eventsourcing.persistence import OperationalError
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError, OutboundBufferLimitError
from nats.errors import TimeoutError as NatsTimeoutError

from eventstore._errors import OutcomeUnknownError, WrongLastSequence
from eventstore._positions import Positions
from eventstore._publish import publish
from eventstore._reads import Reads
from eventstore._records import StreamSettings, Write

__all__ = ["MAYBE_SENT", "NOT_SENT", "LostAcks"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

_RESOLVE_WINDOW: Final = 4.0
"""How many request timeouts a lost acknowledgement may take to resolve (reconnects included)."""
NOT_SENT: Final = (OutboundBufferLimitError, NoRespondersError)
"""Errors after which the write certainly did not land (disconnected: no buffer; no stream)."""
MAYBE_SENT: Final = (NatsTimeoutError, asyncio.TimeoutError)
"""Errors after which the write may or may not have landed: the acknowledgement was lost."""


class LostAcks:
    """The resolution of lost acknowledgements of a log's writes (``JetStreamLog`` holds one,
    and hands it to its ``Writes``); use only on the loop the log was opened on.

    Args:
        nc: the log's connection, on which a write is sent again.
        settings: the stream's settings (the timeout sets the resolution window).
        positions: the store's position cache: a resolved write's sequence is recorded as seen.
        reads: the log's read path, through which a write is read back from the stream leader.
    """

    def __init__(
        self, nc: NATS, settings: StreamSettings, positions: Positions, reads: Reads
    ) -> None:
        self._nc = nc
        self._settings = settings
        self._positions = positions
        self._reads = reads

    async def retrying(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()``, again while the server is unreachable, for a bounded window."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settings.timeout * _RESOLVE_WINDOW
        while True:
            try:
                return await make()
            except (*NOT_SENT, *MAYBE_SENT):
                if loop.time() >= deadline or self._nc.is_closed:
                    raise
                await asyncio.sleep(0.05)

    async def resolve(
        self, writes: Sequence[Write], expected: dict[str, int], cause: BaseException
    ) -> int:
        """The first attempt got no acknowledgement: decide, by reading back, whether it landed.

        Returns the last sequence of the write when it is stored (exactly once). Raises
        WrongLastSequence when it did not land and someone else moved a subject (the caller
        refreshes and decides again), OperationalError when it certainly did not land, and
        OutcomeUnknownError when the server stayed unreachable for the whole window.
        """
        s = self._settings
        loop = asyncio.get_running_loop()
        deadline = loop.time() + s.timeout * _RESOLVE_WINDOW
        maybe_sent = isinstance(cause, MAYBE_SENT)
        where = f"{len(writes)} record(s) starting on {writes[0].subject}"
        _log.warning("no acknowledgement for %s (%r): resolving by read-back", where, cause)
        while True:
            while not self._nc.is_connected and loop.time() < deadline:
                if self._nc.is_closed:
                    msg = f"NATS connection to {s.url} closed while writing {where}"
                    raise OutcomeUnknownError(msg) if maybe_sent else OperationalError(msg)
                await asyncio.sleep(0.02)
            try:
                # Conditional on the same expected sequences: if the first attempt landed, this
                # one is refused; if it did not, this one is the only one that can land.
                return await publish(self._nc, self._positions, writes, expected, timeout=s.timeout)
            except WrongLastSequence:
                break
            except (*NOT_SENT, *MAYBE_SENT) as e:
                maybe_sent = maybe_sent or isinstance(e, MAYBE_SENT)
                if loop.time() >= deadline:
                    if maybe_sent:
                        msg = (
                            f"outcome unknown: NATS at {s.url} did not acknowledge {where} and "
                            f"stayed unreachable for {s.timeout * _RESOLVE_WINDOW:.0f} s; the "
                            f"write may have landed: read the aggregate back before retrying"
                        )
                        raise OutcomeUnknownError(msg) from e
                    msg = f"NATS at {s.url} unreachable: {where} not written ({e!r})"
                    raise OperationalError(msg) from e
                await asyncio.sleep(0.05)
        probe = writes[0]
        body = {"seq": expected[probe.subject] + 1, "next_by_subj": probe.subject}
        while True:  # a read: retried until the window closes (JetStream may still be recovering)
            try:
                found = await self._reads.leader_get(body)
                break
            except (*NOT_SENT, *MAYBE_SENT) as e:
                if loop.time() >= deadline:
                    msg = (
                        f"outcome unknown: NATS at {s.url} refused {where} as already written "
                        f"but could not be read back; read the aggregate before retrying"
                    )
                    raise OutcomeUnknownError(msg) from e
                await asyncio.sleep(0.05)
        if found is not None and found.payload == probe.payload:
            _log.warning("resolved: %s had landed at sequence %d", where, found.seq)
            return self._positions.seen(found.seq + len(writes) - 1)  # a batch is contiguous
        raise WrongLastSequence(f"{where}: another writer moved {probe.subject} first")
