"""The async side: one NATS connection, one JetStream stream, conditional appends and reads.

Everything here runs on the factory's event loop thread (see ``_loop.py``), so the per-subject
cache below needs no lock: the loop serialises every access to it.

Writes. Each record is appended to a subject (``P.e.<aggregate>``, ``P.s.<aggregate>``,
``P.t.<application>``) with a *position* (the aggregate version, or the tracking notification id)
that must be strictly greater than the last position stored on that subject. JetStream has no
unique index on positions, so we enforce the rule with ``Nats-Expected-Last-Subject-Sequence``:
we know (from a cache, or one direct get) the sequence and position of the subject's last
message, check the new positions against it, and make the server refuse the write if anything
landed on that subject in between (error 10071; a rejected publish consumes no sequence). A
stale cache is harmless: the server refuses, we refresh and decide again. So a save of an
aggregate that was just loaded costs exactly one round trip.

Several records are one ADR-50 atomic batch (``Nats-Batch-Id``/``-Sequence``/``-Commit``):
all-or-nothing, contiguous sequences, not interleaved with other writes. nats.py has no helper:
the non-last messages go out with ``publish`` (no reply) and only the commit is a request.

A lost acknowledgement (the commit's reply times out, or the connection drops under it) is
resolved, never guessed: the same conditional write is sent again with the same expected
sequence, so it cannot land twice. If the server refuses it (10071), we read the message right
after the expected sequence from the stream leader: our own bytes mean the first attempt landed
(success); anything else means another writer won (IntegrityError). Only when the server stays
unreachable for the whole resolution window does the caller get ``OutcomeUnknownError`` (an
OperationalError saying the write may have landed) or, when nothing could have been sent, a plain
OperationalError saying nothing was written.

Creating or vetting the stream itself (server version, unsafe settings, replicas) happens once, in
``open``, and lives in ``_setup.py``.

(Over 400 lines on purpose: writes, reads and the resolution of lost acknowledgements share the
per-subject cache and the high-water mark, which must live on one loop in one object.)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import math
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, TypeVar

import nats
from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
)
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as NatsSubscription
from nats.errors import NoRespondersError, OutboundBufferLimitError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api

from eventstore._codec import position
from eventstore._errors import OutcomeUnknownError, WrongLastSequence, api_error
from eventstore._setup import check_server, ensure_stream

__all__ = ["MAX_BATCH", "JetStreamLog", "Row", "StreamSettings", "Write"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BATCH: Final = 1000
"""The server's limit on messages per atomic batch (error 10199 beyond it)."""
_READ_BATCH: Final = 1000
_CONSUMER_READ_MIN: Final = 100
_CACHE_SIZE: Final = 50_000
_START_PROBES: Final = 8
"""Direct gets a read from a position may spend finding where to start (then: the start)."""
_PROBE_MARGIN: Final = 1.1
"""Once the density is learnt, each step back overshoots its estimate this much: a few rows
more are cheaper than another request (the first step, at density 1, is exact or short)."""
_ATTEMPTS: Final = 5
_MIN_LAST_SEQ_NOT_MET: Final = 10180
_NO_MESSAGE: Final = 10037
_RESOLVE_WINDOW: Final = 4.0
"""How many request timeouts a lost acknowledgement may take to resolve (reconnects included)."""
_NOT_SENT: Final = (OutboundBufferLimitError, NoRespondersError)
"""Errors after which the write certainly did not land (disconnected: no buffer; no stream)."""
_MAYBE_SENT: Final = (NatsTimeoutError, asyncio.TimeoutError)
"""Errors after which the write may or may not have landed: the acknowledgement was lost."""


class Row(NamedTuple):
    """One stored message as read back: its stream sequence, payload and subject."""

    seq: int
    payload: bytes
    subject: str


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """Where the log lives. Built by the factory from the environment."""

    url: str
    stream: str
    prefix: str
    replicas: int = 1
    timeout: float = 5.0


@dataclass(frozen=True, slots=True)
class Write:
    """One record to append: ``position`` must exceed the subject's last stored position."""

    subject: str
    position: int
    payload: bytes


@dataclass(slots=True)
class _Last:
    position: int
    seq: int


class _Known:
    """What the logs of one store know about the stream, shared by every connection's log
    (the loop thread's and each writing thread's own): each subject's last (position, seq)
    and the highest sequence seen. Thread-safe."""

    def __init__(self) -> None:
        self.last: OrderedDict[str, _Last] = OrderedDict()
        self.high_water = 0
        self.lock = threading.Lock()


def _stream_sequence(msg: Msg) -> int:
    """A delivered message's stream sequence, read from its reply subject.

    ``msg.metadata`` parses every field (and builds a datetime) on each message; a follower of
    the whole stream only needs this one. ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>...``
    has 9 tokens; the newer form with domain and account hash is left to nats.py.
    """
    tokens = (msg.reply or "").split(".")
    if len(tokens) == 9:
        return int(tokens[5])
    return int(msg.metadata.sequence.stream)


def _above(row: Row, after: int) -> bool:
    """Whether ``row``'s position is above ``after``, read from its head alone (a row whose head
    cannot be read is kept, for the reader's decoding to name it)."""
    try:
        return position(row.payload) > after
    except DataError:
        return True


def _check_reply(data: bytes, where: str) -> dict[str, Any]:
    """Parse a JetStream API reply (a PubAck or an error) and raise on error."""
    try:
        reply: dict[str, Any] = json.loads(data)
    except ValueError as e:
        msg = f"unreadable JetStream reply on {where}: {data[:200]!r}"
        raise DatabaseError(msg) from e
    err = reply.get("error")
    if err:
        raise api_error(err.get("err_code"), err.get("code"), err.get("description", ""), where)
    return reply


class JetStreamLog:
    """An append-only log of records on one stream, with conditional appends and fast reads.

    Construct with ``await JetStreamLog.open(settings)``; use only on the loop it was opened on.
    """

    def __init__(self, nc: NATS, settings: StreamSettings, known: _Known | None = None) -> None:
        self.nc = nc
        self.settings = settings
        self._known = known or _Known()
        self._last = self._known.last  # the same object: never rebound
        self._direct = f"$JS.API.DIRECT.GET.{settings.stream}"
        self._leader_reads = settings.replicas > 1
        self.consumer_read_min = _CONSUMER_READ_MIN
        """Pages of at least this many rows are read through a consumer (see read())."""

    @property
    def _high_water(self) -> int:
        """Highest stream sequence this process has seen. With R>1, a direct get may be answered
        by a lagging replica; "min_last_seq" makes only an up-to-date one answer, which gives
        read-your-writes without routing every read to the leader."""
        return self._known.high_water

    # ------------------------------------------------------------------ connections
    @staticmethod
    async def connect(settings: StreamSettings, name: str) -> NATS:
        """A connection as every log of the store makes it."""

        async def on_error(e: Exception) -> None:
            # nats.py's default prints a traceback per failed reconnect attempt.
            _log.warning("NATS %s (%s): %r", _without_password(settings.url), name, e)

        return await nats.connect(
            settings.url,
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
        return JetStreamLog(nc, self.settings, self._known)

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

    # ------------------------------------------------------------------ writes
    async def append(self, writes: Sequence[Write], *, optimistic: Callable[[Write], bool]) -> int:
        """Append ``writes`` atomically; return the stream sequence of the last one.

        Args:
            writes: records in order; positions must increase per subject.
            optimistic: for a subject absent from the cache, True means "assume it is empty"
                (a new aggregate's first event) and skip the look-up; the server corrects us.

        Raises:
            IntegrityError: a position is not above the subject's last one (someone else wrote
                it, or it repeats inside ``writes``).
        """
        if not writes:
            msg = "append() needs at least one record"
            raise ProgrammingError(msg)
        if len(writes) > MAX_BATCH:
            msg = f"{len(writes)} records in one atomic write; JetStream allows {MAX_BATCH}"
            raise ProgrammingError(msg)
        first: dict[str, Write] = {}
        previous: dict[str, int] = {}
        for w in writes:
            if w.subject in previous and w.position <= previous[w.subject]:
                msg = f"positions not increasing on {w.subject}: {w.position}"
                raise IntegrityError(msg)
            previous[w.subject] = w.position
            first.setdefault(w.subject, w)

        refresh: set[str] = set()
        for _ in range(_ATTEMPTS):
            lookups = [
                subj
                for subj, w in first.items()
                if subj in refresh or (subj not in self._last and not optimistic(w))
            ]
            if lookups:
                subjects = list(lookups)
                await self._retrying(lambda: asyncio.gather(*map(self.last_on_subject, subjects)))  # noqa: B023
            expected: dict[str, int] = {}
            for subj, w in first.items():
                last = self._last.get(subj)
                if last is not None and w.position <= last.position:
                    msg = f"position {w.position} on {subj} already taken (last {last.position})"
                    raise IntegrityError(msg)
                # 0 = "no message on this subject yet"
                expected[subj] = last.seq if last is not None else 0
            try:
                try:
                    seq = await self._publish(writes, expected)
                except (*_NOT_SENT, *_MAYBE_SENT) as e:
                    seq = await self._resolve(writes, expected, e)
            except WrongLastSequence:
                refresh = set(first)  # which subject failed is not said: look at all of them
                continue
            base = seq - len(writes) + 1
            for i, w in enumerate(writes):
                self._remember(w.subject, w.position, base + i)
            return seq
        msg = f"gave up after {_ATTEMPTS} concurrent-write conflicts on {sorted(first)}"
        raise IntegrityError(msg)

    async def append_each(
        self, units: Sequence[Sequence[Write]], *, optimistic: Callable[[Write], bool]
    ) -> list[int | BaseException]:
        """Append independent units, each atomic on its own, with as many in flight as possible.

        For each unit, in order: the stream sequence of its last record, or the exception that
        ``append`` raised for it. A one-record unit is a plain conditional publish (no atomic
        batch: ~0.2 ms instead of ~2.3 ms, and not serialised behind other batches); units on
        different subjects are in flight together. Units sharing a subject land in order: one
        that follows a failed one is not written (its positions were decided on a state that
        is not stored) and reports IntegrityError when the earlier one conflicted,
        OperationalError ("not written") otherwise. One-record units in a row on one subject
        travel as a chain (``_append_chain``): all sent at once, not one round trip each.
        """
        loop = asyncio.get_running_loop()
        last_on: dict[str, asyncio.Future[int]] = {}
        chains: dict[str, list[tuple[Write, asyncio.Future[int]]]] = {}
        """Each subject's open chain: one-record units in a row, not yet started."""
        started: list[asyncio.Future[None]] = []
        out: list[asyncio.Future[int]] = []
        for unit in units:
            subject = unit[0].subject if unit else ""
            if len(unit) == 1:
                chain = chains.get(subject)
                if chain is None:
                    chain = chains[subject] = []
                    before = {last_on[subject]} if subject in last_on else set()
                    run = self._chain_after(before, chain, optimistic)
                    started.append(asyncio.ensure_future(run))
                future: asyncio.Future[int] = loop.create_future()
                chain.append((unit[0], future))
                last_on[subject] = future
                out.append(future)
                continue
            before = {last_on[w.subject] for w in unit if w.subject in last_on}
            task = asyncio.ensure_future(self._append_after(before, unit, optimistic))
            for w in unit:
                last_on[w.subject] = task
                chains.pop(w.subject, None)  # a later one-record unit starts a new chain
            out.append(task)
        results = await asyncio.gather(*out, return_exceptions=True)
        await asyncio.gather(*started)  # done by now: each settles its futures, then ends
        return results

    async def _append_after(
        self,
        before: set[asyncio.Future[int]],
        writes: Sequence[Write],
        optimistic: Callable[[Write], bool],
    ) -> int:
        await _earlier_stored(before, writes[0].subject)
        return await self.append(writes, optimistic=optimistic)

    async def _chain_after(
        self,
        before: set[asyncio.Future[int]],
        chain: list[tuple[Write, asyncio.Future[int]]],
        optimistic: Callable[[Write], bool],
    ) -> None:
        """Write ``chain`` (one-record units of one subject, in order) once ``before`` is stored;
        settle each unit's future with its sequence or its error. Raises only a cancel."""
        try:
            await _earlier_stored(before, chain[0][0].subject)
            writes = [w for w, _ in chain]
            outcomes: list[int | BaseException]
            if len(writes) == 1:
                outcomes = [await self.append(writes, optimistic=optimistic)]
            else:
                outcomes = await self._append_chain(writes, optimistic)
        except BaseException as e:  # handed to every unit's caller (a cancel is raised on)
            outcomes = [e] * len(chain)
            stopped: BaseException | None = e if isinstance(e, asyncio.CancelledError) else None
        else:
            stopped = None
        for (_, future), outcome in zip(chain, outcomes, strict=True):
            if future.done():
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        if stopped is not None:
            raise stopped

    async def _append_chain(
        self, writes: Sequence[Write], optimistic: Callable[[Write], bool]
    ) -> list[int | BaseException]:
        """One-record writes to one subject, in order, sent together: one round trip, not one
        each, and each still lands only on exactly what it was decided on.

        The first is conditional on the subject's last sequence, as any write; each later one
        on the one before it being the stream's last message (``Nats-Expected-Last-Msg-Id``,
        with ``Nats-Msg-Id`` on every one but the last). So a later record lands only right
        after its predecessor: if that one was refused, or anything else landed in between
        (another writer, on any subject), it is refused too (10070) and nothing is lost; from
        the first record that did not land, the rest are written one by one as ``append``
        would, and one whose acknowledgement was lost is resolved by reading back, as ever.
        Without the subject's last sequence at hand (not cached, not a new aggregate) the
        records go one by one from the start.
        """
        subject = writes[0].subject
        last = self._last.get(subject)
        known = last is not None or optimistic(writes[0])
        increasing = all(a.position < b.position for a, b in itertools.pairwise(writes))
        taken = last is not None and writes[0].position <= last.position
        if not known or not increasing or taken:  # one by one: ``append`` decides and names it
            return await self._one_by_one(writes, optimistic)
        expected = last.seq if last is not None else 0
        ids = [uuid.uuid4().hex for _ in writes[1:]]
        hdr_seq = api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value
        hdr_msg = api.Header.EXPECTED_LAST_MSG_ID.value
        heads: list[dict[str, str]] = []
        for i in range(len(writes)):
            h = {hdr_seq: str(expected)} if i == 0 else {hdr_msg: ids[i - 1]}
            if i < len(ids):
                h[api.Header.MSG_ID.value] = ids[i]
            heads.append(h)
        replies = await self._requests(subject, [w.payload for w in writes], heads)
        sent = [_sent(r, subject) for r in replies]
        return await self._one_by_one(writes, optimistic, sent, after=expected)

    async def _one_by_one(
        self,
        writes: Sequence[Write],
        optimistic: Callable[[Write], bool],
        sent: Sequence[int | BaseException] = (),
        *,
        after: int | None = None,
    ) -> list[int | BaseException]:
        """Decide each of ``writes`` in turn, from what sending them together got back
        (``sent``; empty: not sent yet): its sequence where it landed; "not written" after
        one that did not land; where it was refused (an error reply), ``append`` writes it;
        where its acknowledgement was lost, it may have landed and is resolved as ``append``
        resolves its own (sent again conditional on the record before it, then read back).
        ``after``: the subject's last sequence the first of them was sent against."""
        out: list[int | BaseException] = []
        previous = after
        for i, w in enumerate(writes):
            attempt = sent[i] if i < len(sent) else None
            if out and isinstance(out[-1], BaseException):
                out.append(_not_written(w.subject, out[-1]))
                continue
            try:
                if isinstance(attempt, int):
                    seq = self._seen(attempt)
                elif previous is not None and isinstance(attempt, (*_NOT_SENT, *_MAYBE_SENT)):
                    try:
                        seq = await self._resolve([w], {w.subject: previous}, attempt)
                    except WrongLastSequence:  # not ours: decide again, as ``append`` does
                        seq = await self.append([w], optimistic=optimistic)
                else:
                    seq = await self.append([w], optimistic=optimistic)
            except Exception as e:  # this record's outcome
                out.append(e)
                continue
            self._remember(w.subject, w.position, seq)
            out.append(seq)
            previous = seq
        return out

    async def _requests(
        self, subject: str, payloads: Sequence[bytes], headers: Sequence[dict[str, str]]
    ) -> list[Msg | BaseException]:
        """Publish every message to ``subject`` in this order, back to back, then wait for each
        reply (bounded by the store's timeout): each reply, or why there is none (``_NOT_SENT``:
        it was certainly not sent; ``_MAYBE_SENT``: it may have been)."""
        nc = self.nc
        inbox = nc.new_inbox()
        sub = await nc.subscribe(f"{inbox}.*")
        out: dict[int, Msg | BaseException] = {}
        try:
            for i, (payload, h) in enumerate(zip(payloads, headers, strict=True)):
                try:
                    await nc.publish(subject, payload, reply=f"{inbox}.{i}", headers=h)
                except Exception as e:  # this one and the rest were not sent
                    for j in range(i, len(payloads)):
                        out[j] = e
                    break
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.settings.timeout
            while len(out) < len(payloads):
                try:
                    msg = await sub.next_msg(timeout=max(deadline - loop.time(), 0.001))
                except Exception as e:  # the timeout, or the connection closed
                    for j in range(len(payloads)):
                        out.setdefault(j, e)
                    break
                index = int(msg.subject.rsplit(".", 1)[1])
                if (msg.headers or {}).get("Status") == "503":
                    out[index] = NoRespondersError()
                else:
                    out[index] = msg
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return [out[i] for i in range(len(payloads))]

    async def _publish(self, writes: Sequence[Write], expected: dict[str, int]) -> int:
        timeout = self.settings.timeout
        hdr_expected = api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value
        checked: set[str] = set()

        def headers(w: Write) -> dict[str, str]:
            # One check per subject per batch: a second one is refused (10164).
            if w.subject in checked:
                return {}
            checked.add(w.subject)
            return {hdr_expected: str(expected[w.subject])}

        if len(writes) == 1:
            w = writes[0]
            resp = await self.nc.request(w.subject, w.payload, timeout, headers=headers(w))
            ack = _check_reply(resp.data, w.subject)
            return self._seen(int(ack["seq"]))
        batch_id = uuid.uuid4().hex
        last = len(writes) - 1
        for i, w in enumerate(writes[:last], start=1):
            h = headers(w)
            h[api.Header.BATCH_ID.value] = batch_id
            h[api.Header.BATCH_SEQUENCE.value] = str(i)
            await self.nc.publish(w.subject, w.payload, headers=h)
        w = writes[last]
        h = headers(w)
        h[api.Header.BATCH_ID.value] = batch_id
        h[api.Header.BATCH_SEQUENCE.value] = str(len(writes))
        h[api.Header.BATCH_COMMIT.value] = "1"
        resp = await self.nc.request(w.subject, w.payload, timeout, headers=h)
        ack = _check_reply(resp.data, f"atomic batch of {len(writes)} ending on {w.subject}")
        if int(ack.get("count", len(writes))) != len(writes):
            msg = f"atomic batch committed {ack.get('count')} of {len(writes)} messages"
            raise DatabaseError(msg)
        return self._seen(int(ack["seq"]))

    async def _retrying(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()``, again while the server is unreachable, for a bounded window."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.timeout * _RESOLVE_WINDOW
        while True:
            try:
                return await make()
            except (*_NOT_SENT, *_MAYBE_SENT):
                if loop.time() >= deadline or self.nc.is_closed:
                    raise
                await asyncio.sleep(0.05)

    async def _resolve(
        self, writes: Sequence[Write], expected: dict[str, int], cause: BaseException
    ) -> int:
        """The first attempt got no acknowledgement: decide, by reading back, whether it landed.

        Returns the last sequence of the write when it is stored (exactly once). Raises
        WrongLastSequence when it did not land and someone else moved a subject (the caller
        refreshes and decides again), OperationalError when it certainly did not land, and
        OutcomeUnknownError when the server stayed unreachable for the whole window.
        """
        s = self.settings
        loop = asyncio.get_running_loop()
        deadline = loop.time() + s.timeout * _RESOLVE_WINDOW
        maybe_sent = isinstance(cause, _MAYBE_SENT)
        where = f"{len(writes)} record(s) starting on {writes[0].subject}"
        _log.warning("no acknowledgement for %s (%r): resolving by read-back", where, cause)
        while True:
            while not self.nc.is_connected and loop.time() < deadline:
                if self.nc.is_closed:
                    msg = f"NATS connection to {s.url} closed while writing {where}"
                    raise OutcomeUnknownError(msg) if maybe_sent else OperationalError(msg)
                await asyncio.sleep(0.02)
            try:
                # Conditional on the same expected sequences: if the first attempt landed, this
                # one is refused; if it did not, this one is the only one that can land.
                return await self._publish(writes, expected)
            except WrongLastSequence:
                break
            except (*_NOT_SENT, *_MAYBE_SENT) as e:
                maybe_sent = maybe_sent or isinstance(e, _MAYBE_SENT)
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
                found = await self.leader_get(body)
                break
            except (*_NOT_SENT, *_MAYBE_SENT) as e:
                if loop.time() >= deadline:
                    msg = (
                        f"outcome unknown: NATS at {s.url} refused {where} as already written "
                        f"but could not be read back; read the aggregate before retrying"
                    )
                    raise OutcomeUnknownError(msg) from e
                await asyncio.sleep(0.05)
        if found is not None and found.payload == probe.payload:
            _log.warning("resolved: %s had landed at sequence %d", where, found.seq)
            return self._seen(found.seq + len(writes) - 1)  # a batch is contiguous
        raise WrongLastSequence(f"{where}: another writer moved {probe.subject} first")

    async def leader_get(self, body: dict[str, Any]) -> Row | None:
        """One message through the stream leader's ``STREAM.MSG.GET`` (consistent at any R)."""
        s = self.settings
        resp = await self.nc.request(
            f"$JS.API.STREAM.MSG.GET.{s.stream}", json.dumps(body).encode(), s.timeout
        )
        try:
            reply: dict[str, Any] = json.loads(resp.data)
        except ValueError as e:
            raise DatabaseError(f"unreadable STREAM.MSG.GET reply: {resp.data[:200]!r}") from e
        err = reply.get("error")
        if err:
            if err.get("err_code") == _NO_MESSAGE:
                return None
            where = f"leader get {body}"
            raise api_error(err.get("err_code"), err.get("code"), err.get("description", ""), where)
        m = reply["message"]
        return Row(self._seen(int(m["seq"])), base64.b64decode(m.get("data") or ""), m["subject"])

    def _seen(self, seq: int) -> int:
        known = self._known
        if seq > known.high_water:
            with known.lock:
                known.high_water = max(known.high_water, seq)
        return seq

    def _remember(self, subject: str, position: int, seq: int) -> None:
        """Cache a subject's last (position, seq); never move it backwards."""
        with self._known.lock:
            last = self._last.get(subject)
            if last is None or seq > last.seq:
                self._last[subject] = _Last(position, seq)
            self._last.move_to_end(subject)
            while len(self._last) > _CACHE_SIZE:
                self._last.popitem(last=False)

    def _remember_row(self, subject: str, row: Row) -> None:
        try:
            self._remember(subject, position(row.payload), row.seq)
        except DataError:
            # Not ours to decode: the recorder names it (sequence and subject) to its caller.
            self.forget(subject)

    def forget(self, subject: str) -> None:
        with self._known.lock:
            self._last.pop(subject, None)

    async def last_on_subject(self, subject: str) -> Row | None:
        """The last message on one (non-wildcard) subject; refreshes the cache for it."""
        self.forget(subject)
        found = await self.last(subject)
        if found is not None:
            self._remember_row(subject, found)
        return found

    # ------------------------------------------------------------------ reads
    def _request(self, body: dict[str, Any]) -> bytes:
        if self.settings.replicas > 1 and self._high_water:
            body["min_last_seq"] = self._high_water
        return json.dumps(body).encode()

    async def last(self, subject: str) -> Row | None:
        """The last message on ``subject`` (wildcards allowed), or None.

        With replicas > 1 this asks the stream leader: "the last" must be the latest write
        (max notification id, max tracking id, the version a writer checks against).
        """
        return await self._get_one({"last_by_subj": subject}, subject)

    async def _get_one(self, body: dict[str, Any], subject: str) -> Row | None:
        """One message by a direct get ``body`` (the stream leader's with replicas > 1)."""
        if self._leader_reads:
            return await self.leader_get(body)
        for _ in range(3):
            msg = await self.nc.request(
                self._direct, self._request(dict(body)), self.settings.timeout
            )
            hdrs = msg.headers or {}
            status = hdrs.get("Status")
            if status == "404":
                return None
            if status is None:
                seq = self._seen(int(hdrs["Nats-Sequence"]))
                return Row(seq, msg.data, hdrs.get("Nats-Subject", subject))
            if status == "412" or str(_MIN_LAST_SEQ_NOT_MET) in hdrs.get("Description", ""):
                await asyncio.sleep(0.01)  # a lagging replica answered; ask again
                continue
            raise DatabaseError(f"direct get on {subject}: {status} {hdrs.get('Description')}")
        raise OperationalError(f"no up-to-date replica answered for {subject}")

    async def read_subject(self, subject: str, *, after: int = 0) -> list[Row]:
        """The messages on one (non-wildcard) subject whose position is above ``after`` (all by
        default), in order; remembers the subject's last (position, seq).

        Rows at or below ``after`` are skipped by the position in their head, never decoded (a
        row whose head cannot be read is kept: decoding it names the problem), and the read
        starts near the first wanted row (``_start_after``), not at the subject's first: loading
        from a snapshot reads the events past it, not the whole aggregate.
        """
        start: int | None = 1
        if after > 0:
            start = await self._start_after(subject, after)
        if start is None:
            return []
        rows = await self.read(subject, start)
        if rows:
            self._remember_row(subject, rows[-1])
        return [row for row in rows if _above(row, after)] if after > 0 else rows

    async def _start_after(self, subject: str, after: int) -> int | None:
        """A stream sequence at or before the first row on ``subject`` with a position above
        ``after`` (1 when unsure); None when the subject is empty.

        Positions increase along a subject, so a row known at (position, seq) with a position
        of at most ``after + 1`` is a place to start. From the subject's last row (cached, or
        one direct get), direct gets ``{seq, next_by_subj}`` step back by the rows still wanted
        times the stream's density (stream sequences per row of this subject: 1 at first,
        exact for an aggregate written alone, then learnt from each step). A step is one small
        request, the cost of a few rows of a batch read (whose headers nats.py parses in
        Python): from a snapshot at 150 of 200 events, ~55 messages arrive instead of 200,
        with 1, 10 or 100 aggregates interleaved, in 2 to 4 direct gets.
        """
        known = self._last.get(subject)
        if known is not None:
            pos, seq = known.position, known.seq
        else:
            found = await self.last_on_subject(subject)
            if found is None:
                return None
            try:
                pos, seq = position(found.payload), found.seq
            except DataError:
                return 1
        density, margin = 1.0, 1.0
        for _ in range(_START_PROBES):
            if pos <= after:
                return seq + 1
            if pos == after + 1:
                return seq
            probe = seq - math.ceil((pos - after - 1) * density * margin)
            if probe <= 1:
                return 1
            body = {"seq": probe, "next_by_subj": subject}
            found = await self._get_one(body, subject)
            if found is None:
                return 1
            try:
                stepped = position(found.payload)
            except DataError:
                return 1
            if stepped < pos:  # rows stepped over per stream sequence: the density
                density = max(1.0, (seq - found.seq) / (pos - stepped))
            else:  # none of the subject's rows in [probe, seq): at least this sparse
                density = max(2 * density, float(seq - probe))
            margin = _PROBE_MARGIN
            pos, seq = stepped, found.seq
        return 1

    async def read(
        self, subject: str, start: int = 1, *, limit: int | None = None, stop: int | None = None
    ) -> list[Row]:
        """Messages on ``subject`` (wildcards allowed) from sequence ``start``, in order.

        Uses batch direct get: one request, a stream of replies, then a 204 end-of-batch. The
        server ignores ``up_to_seq`` for a plain batch, so ``stop`` is enforced here. A page of
        at least ``consumer_read_min`` rows on a single-replica stream goes through a short-lived
        pull consumer instead (see ``_read_consumer``).
        """
        if limit is not None and limit >= self.consumer_read_min and not self._leader_reads:
            return await self._read_consumer(subject, max(start, 1), limit, stop)
        out: list[Row] = []
        seq = max(start, 1)
        while limit is None or len(out) < limit:
            want = _READ_BATCH if limit is None else min(_READ_BATCH, limit - len(out))
            if stop is not None:
                if seq > stop:
                    break
                want = min(want, stop - seq + 1)
            got, more = await self._read_batch(subject, seq, want)
            for row in got:
                if stop is not None and row.seq > stop:
                    return out
                out.append(row)
            if not got or not more:
                break
            seq = got[-1].seq + 1
        return out

    async def _read_consumer(
        self, subject: str, seq: int, limit: int, stop: int | None
    ) -> list[Row]:
        """Up to ``limit`` messages on ``subject`` from ``seq`` (up to ``stop``), in order.

        A batch direct get answers with five headers per message, and nats.py parses them all
        in Python: that is most of the cost of a large page. A consumer delivers the payload
        alone (the stream sequence is in the reply subject), about three times as fast. It costs
        one more round trip (creating it, which also says how many messages match), so only
        pages of ``consumer_read_min`` rows or more use it. Single replica only: an R1 consumer
        of a replicated stream could sit on a lagging replica.
        """
        if stop is not None and seq > stop:
            return []
        s = self.settings
        name = f"es_{uuid.uuid4().hex}"
        inbox = self.nc.new_inbox()
        out: list[Row] = []
        finished: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        want = limit

        async def on_msg(msg: Msg) -> None:
            if finished.done():
                return
            status = msg.headers.get("Status") if msg.headers else None
            if status is not None:
                # 404 no messages / 408 request expired: the consumer has nothing more for us.
                finished.set_result(None if status in ("404", "408") else status)
                return
            row = Row(msg.metadata.sequence.stream, msg.data, msg.subject)
            out.append(row)
            if len(out) >= want or (stop is not None and row.seq >= stop):
                finished.set_result(None)

        sub = await self.nc.subscribe(inbox, cb=on_msg)
        created = False
        try:
            config = {
                "name": name,
                "deliver_policy": "by_start_sequence",
                "opt_start_seq": seq,
                "ack_policy": "none",
                "filter_subject": subject,
                "inactive_threshold": int(s.timeout * 10 * 1e9),  # clean-up if DELETE is lost
                "mem_storage": True,
                "num_replicas": 1,
            }
            body = {"stream_name": s.stream, "config": config, "action": "create"}
            resp = await self.nc.request(
                f"$JS.API.CONSUMER.CREATE.{s.stream}.{name}", json.dumps(body).encode(), s.timeout
            )
            info = _check_reply(resp.data, f"consumer on {subject} from {seq}")
            created = True
            want = min(limit, int(info.get("num_pending") or 0))
            if want == 0:
                return []
            await self.nc.publish(
                f"$JS.API.CONSUMER.MSG.NEXT.{s.stream}.{name}",
                json.dumps({"batch": want, "no_wait": True}).encode(),
                reply=inbox,
            )
            try:
                status = await asyncio.wait_for(finished, s.timeout)
            except TimeoutError:
                raise NatsTimeoutError from None
            if status is not None:
                raise DatabaseError(f"consumer read on {subject} from {seq}: status {status}")
        finally:
            await sub.unsubscribe()
            if created and self.nc.is_connected:
                # No reply wanted: the consumer also removes itself once inactive.
                await self.nc.publish(f"$JS.API.CONSUMER.DELETE.{s.stream}.{name}", b"")
        if stop is not None:
            out = [row for row in out if row.seq <= stop]
        if out:
            self._seen(out[-1].seq)
        return out

    async def _read_batch(self, subject: str, seq: int, batch: int) -> tuple[list[Row], bool]:
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox)
        try:
            body = self._request({"seq": seq, "next_by_subj": subject, "batch": batch})
            await self.nc.publish(self._direct, body, reply=inbox)
            got: list[Row] = []
            while True:
                msg = await sub.next_msg(timeout=self.settings.timeout)
                hdrs = msg.headers or {}
                status = hdrs.get("Status")
                if status is None:
                    got.append(Row(int(hdrs["Nats-Sequence"]), msg.data, hdrs["Nats-Subject"]))
                    continue
                if status == "404":  # nothing at or after seq on that subject
                    return got, False
                if status == "204":  # end of batch; pending = matches left after it
                    pending = int(hdrs.get("Nats-Num-Pending", "0") or 0)
                    if got:
                        self._seen(got[-1].seq)
                    return got, pending > 0
                raise DatabaseError(
                    f"batch direct get on {subject}: {status} {hdrs.get('Description')}"
                )
        finally:
            await sub.unsubscribe()

    async def consume(
        self, subject: str, start: int, on_msg: Callable[[Row], None]
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        """Ordered consumer on ``subject`` from sequence ``start``; returns its unsubscribe.

        An ordered consumer sees only stored (and, for batches, committed) messages, in stream
        order, and recreates itself on a gap; a core subscription could see a message before
        JetStream stores it.
        """
        js = self.nc.jetstream(timeout=self.settings.timeout)

        async def cb(msg: Msg) -> None:
            on_msg(Row(_stream_sequence(msg), msg.data, msg.subject))

        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=max(start, 1),
        )
        sub: NatsSubscription = await js.subscribe(
            subject,
            stream=self.settings.stream,
            cb=cb,
            ordered_consumer=True,
            config=config,
            idle_heartbeat=2.0,
        )
        return sub.unsubscribe


def _without_password(url: str) -> str:
    """``url`` with any password masked, for logs (``nats://user:secret@host`` → ``user:***``)."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


async def _earlier_stored(before: set[asyncio.Future[int]], subject: str) -> None:
    """Wait for the writes ``before`` on ``subject``; raise as the later write's own error
    (it is not sent) when one of them failed."""
    for earlier in before:
        try:
            await earlier
        except BaseException as e:  # named in the later write's error
            raise _not_written(subject, e) from None


def _not_written(subject: str, earlier: BaseException) -> Exception:
    if isinstance(earlier, IntegrityError):
        return IntegrityError(f"not written: an earlier record on {subject} conflicted ({earlier})")
    return OperationalError(f"not written: an earlier record on {subject} failed ({earlier!r})")


def _sent(reply: Msg | BaseException, subject: str) -> int | BaseException:
    """What sending one record of a chain got back: its stream sequence once acknowledged,
    else the refusal (an error reply) or the transport's exception (no reply)."""
    if isinstance(reply, BaseException):
        return reply
    try:
        return int(_check_reply(reply.data, subject)["seq"])
    except DatabaseError as e:
        return e
