"""The write path: conditional appends, atomic batches, and chains of one-record writes.

Each record is appended to a subject (``P.e.<aggregate>``, ``P.s.<aggregate>``,
``P.t.<application>``) with a *position* (the aggregate version, or the tracking notification id)
that must be strictly greater than the last position stored on that subject. JetStream has no
unique index on positions, so we enforce the rule with ``Nats-Expected-Last-Subject-Sequence``:
we know (from the position cache, ``_positions.py``, or one direct get) the sequence and position
of the subject's last message, check the new positions against it, and make the server refuse the
write if anything landed on that subject in between (error 10071; a rejected publish consumes no
sequence). A stale cache is harmless: the server refuses, we refresh and decide again. So a save
of an aggregate that was just loaded costs exactly one round trip.

Several records are one ADR-50 atomic batch: all-or-nothing, contiguous sequences, not
interleaved with other writes. One write goes on the wire as ``_publish.py`` sends it.

A write whose acknowledgement is lost is resolved by reading back: ``Writes`` is handed the log's
``LostAcks`` (``_lost_acks.py``), as it is handed the log's ``Reads`` for look-ups and the
store's ``Positions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import Final

from eventsourcing.persistence import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
)
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.js import api

from eventstore._errors import WrongLastSequence, check_reply
from eventstore._lost_acks import MAYBE_SENT, NOT_SENT, LostAcks
from eventstore._positions import Positions
from eventstore._publish import publish
from eventstore._reads import Reads
from eventstore._records import MAX_BATCH, StreamSettings, Write

__all__ = ["Writes"]

_ATTEMPTS: Final = 5


class Writes:
    """The write path of a log (``JetStreamLog`` holds one); use only on the loop it was opened on.

    Args:
        nc: the log's connection.
        settings: the stream's settings.
        positions: the store's position cache: what a write is decided on, and what it records.
        reads: the log's read path, which looks up a subject's last message when not cached.
        lost_acks: the log's resolver of writes whose acknowledgement was lost.
    """

    def __init__(
        self,
        nc: NATS,
        settings: StreamSettings,
        positions: Positions,
        reads: Reads,
        lost_acks: LostAcks,
    ) -> None:
        self._nc = nc
        self._settings = settings
        self._positions = positions
        self._reads = reads
        self._lost_acks = lost_acks

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
                if subj in refresh or (self._positions.get(subj) is None and not optimistic(w))
            ]
            if lookups:
                subjects, look_up = list(lookups), self._reads.last_on_subject
                await self._lost_acks.retrying(
                    lambda: asyncio.gather(*map(look_up, subjects))  # noqa: B023
                )
            expected: dict[str, int] = {}
            for subj, w in first.items():
                last = self._positions.get(subj)
                if last is not None and w.position <= last.position:
                    msg = f"position {w.position} on {subj} already taken (last {last.position})"
                    raise IntegrityError(msg)
                # 0 = "no message on this subject yet"
                expected[subj] = last.seq if last is not None else 0
            try:
                try:
                    seq = await publish(
                        self._nc, self._positions, writes, expected, timeout=self._settings.timeout
                    )
                except (*NOT_SENT, *MAYBE_SENT) as e:
                    seq = await self._lost_acks.resolve(writes, expected, e)
            except WrongLastSequence:
                refresh = set(first)  # which subject failed is not said: look at all of them
                continue
            base = seq - len(writes) + 1
            for i, w in enumerate(writes):
                self._positions.remember(w.subject, w.position, base + i)
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

        On a replicated stream the chain is one atomic batch instead (``_as_batches``): every
        replica checks ``Nats-Expected-Last-Msg-Id`` again against the last message id it holds
        in memory, which a follower that caught up from its leader's snapshot does not hold; it
        then fails to apply the record ("last msgid mismatch") and the stream stops taking
        writes. A batch's later records need no condition: nothing can land inside it.
        """
        if self._settings.replicas > 1:
            return await self._as_batches(writes, optimistic)
        subject = writes[0].subject
        last = self._positions.get(subject)
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

    async def _as_batches(
        self, writes: Sequence[Write], optimistic: Callable[[Write], bool]
    ) -> list[int | BaseException]:
        """One-record writes to one subject, in order, as atomic batches of at most
        ``MAX_BATCH``: each record's sequence, or the batch's error (and "not written" for the
        batches after a failed one)."""
        out: list[int | BaseException] = []
        for start in range(0, len(writes), MAX_BATCH):
            part = writes[start : start + MAX_BATCH]
            if out and isinstance(out[-1], BaseException):
                out += [_not_written(w.subject, out[-1]) for w in part]
                continue
            try:
                last = await self.append(part, optimistic=optimistic)
            except Exception as e:  # this batch's outcome
                out += [e] * len(part)
                continue
            out += range(last - len(part) + 1, last + 1)
        return out

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
                    seq = self._positions.seen(attempt)
                elif previous is not None and isinstance(attempt, (*NOT_SENT, *MAYBE_SENT)):
                    try:
                        seq = await self._lost_acks.resolve([w], {w.subject: previous}, attempt)
                    except WrongLastSequence:  # not ours: decide again, as ``append`` does
                        seq = await self.append([w], optimistic=optimistic)
                else:
                    seq = await self.append([w], optimistic=optimistic)
            except Exception as e:  # this record's outcome
                out.append(e)
                continue
            self._positions.remember(w.subject, w.position, seq)
            out.append(seq)
            previous = seq
        return out

    async def _requests(
        self, subject: str, payloads: Sequence[bytes], headers: Sequence[dict[str, str]]
    ) -> list[Msg | BaseException]:
        """Publish every message to ``subject`` in this order, back to back, then wait for each
        reply (bounded by the store's timeout): each reply, or why there is none (``NOT_SENT``:
        it was certainly not sent; ``MAYBE_SENT``: it may have been)."""
        nc = self._nc
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
            deadline = loop.time() + self._settings.timeout
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
        return int(check_reply(reply.data, subject)["seq"])
    except DatabaseError as e:
        return e
