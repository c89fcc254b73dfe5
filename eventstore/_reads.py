"""The read path: direct gets (the stream leader's with replicas > 1), batch reads, reads
through a short-lived consumer for large pages, reads from a position near the first wanted row,
and the ordered consumer that follows the stream.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, Final

from eventsourcing.persistence import DatabaseError, DataError, OperationalError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as NatsSubscription
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api

from eventstore._codec import position
from eventstore._errors import api_error, check_reply
from eventstore._positions import Positions
from eventstore._records import Row, StreamSettings

__all__ = ["CONSUMER_READ_MIN", "Reads"]

_READ_BATCH: Final = 1000
CONSUMER_READ_MIN: Final = 100
_START_PROBES: Final = 8
"""Direct gets a read from a position may spend finding where to start (then: the start)."""
_PROBE_MARGIN: Final = 1.1
"""Once the density is learnt, each step back overshoots its estimate this much: a few rows
more are cheaper than another request (the first step, at density 1, is exact or short)."""
_MIN_LAST_SEQ_NOT_MET: Final = 10180
_NO_MESSAGE: Final = 10037
_ELECTING: Final = frozenset({10008, 10074})
"""JetStream's "system temporarily unavailable" and "stream offline": a leader is being
elected; reads are safe to ask again."""


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


class Reads:
    """The read path of a log (``JetStreamLog`` holds one); use only on the loop it was opened on.

    Args:
        nc: the log's connection.
        settings: the stream's settings.
        positions: the store's position cache: reads refresh it and record what they see.
    """

    def __init__(self, nc: NATS, settings: StreamSettings, positions: Positions) -> None:
        self._nc = nc
        self._settings = settings
        self._positions = positions
        self._direct = f"$JS.API.DIRECT.GET.{settings.stream}"
        self.leader_reads = settings.replicas > 1
        """Whether one-message reads go through the stream leader (replicas > 1)."""
        self.consumer_read_min = CONSUMER_READ_MIN
        """Pages of at least this many rows are read through a consumer (see read())."""

    async def last_on_subject(self, subject: str) -> Row | None:
        """The last message on one (non-wildcard) subject; refreshes the cache for it."""
        self._positions.forget(subject)
        found = await self.last(subject)
        if found is not None:
            self._positions.remember_row(subject, found)
        return found

    def _request(self, body: dict[str, object]) -> bytes:
        if self._settings.replicas > 1 and self._positions.high_water:
            body["min_last_seq"] = self._positions.high_water
        return json.dumps(body).encode()

    async def last(self, subject: str) -> Row | None:
        """The last message on ``subject`` (wildcards allowed), or None.

        With replicas > 1 this asks the stream leader: "the last" must be the latest write
        (max notification id, max tracking id, the version a writer checks against).
        """
        return await self._get_one({"last_by_subj": subject}, subject)

    async def _get_one(self, body: dict[str, object], subject: str) -> Row | None:
        """One message by a direct get ``body`` (the stream leader's with replicas > 1)."""
        if self.leader_reads:
            return await self.leader_get(body)
        for _ in range(3):
            msg = await self._nc.request(
                self._direct, self._request(dict(body)), self._settings.timeout
            )
            hdrs = msg.headers or {}
            status = hdrs.get("Status")
            if status == "404":
                return None
            if status is None:
                seq = self._positions.seen(int(hdrs["Nats-Sequence"]))
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
            self._positions.remember_row(subject, rows[-1])
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
        known = self._positions.get(subject)
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
        if limit is not None and limit >= self.consumer_read_min and not self.leader_reads:
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
        s = self._settings
        name = f"es_{uuid.uuid4().hex}"
        inbox = self._nc.new_inbox()
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

        sub = await self._nc.subscribe(inbox, cb=on_msg)
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
            resp = await self._nc.request(
                f"$JS.API.CONSUMER.CREATE.{s.stream}.{name}", json.dumps(body).encode(), s.timeout
            )
            info = check_reply(resp.data, f"consumer on {subject} from {seq}")
            created = True
            want = min(limit, int(info.get("num_pending") or 0))
            if want == 0:
                return []
            await self._nc.publish(
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
            if created and self._nc.is_connected:
                # No reply wanted: the consumer also removes itself once inactive.
                await self._nc.publish(f"$JS.API.CONSUMER.DELETE.{s.stream}.{name}", b"")
        if stop is not None:
            out = [row for row in out if row.seq <= stop]
        if out:
            self._positions.seen(out[-1].seq)
        return out

    async def _read_batch(self, subject: str, seq: int, batch: int) -> tuple[list[Row], bool]:
        inbox = self._nc.new_inbox()
        sub = await self._nc.subscribe(inbox)
        try:
            body = self._request({"seq": seq, "next_by_subj": subject, "batch": batch})
            await self._nc.publish(self._direct, body, reply=inbox)
            got: list[Row] = []
            while True:
                msg = await sub.next_msg(timeout=self._settings.timeout)
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
                        self._positions.seen(got[-1].seq)
                    return got, pending > 0
                raise DatabaseError(
                    f"batch direct get on {subject}: {status} {hdrs.get('Description')}"
                )
        finally:
            await sub.unsubscribe()

    async def consume(
        self, subject: str, start: int, on_msg: Callable[[Row], None]
    ) -> Callable[[], Coroutine[object, object, None]]:
        """Ordered consumer on ``subject`` from sequence ``start``; returns its unsubscribe.

        An ordered consumer sees only stored (and, for batches, committed) messages, in stream
        order, and recreates itself on a gap; a core subscription could see a message before
        JetStream stores it.
        """
        js = self._nc.jetstream(timeout=self._settings.timeout)

        async def cb(msg: Msg) -> None:
            on_msg(Row(_stream_sequence(msg), msg.data, msg.subject))

        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=max(start, 1),
        )
        sub: NatsSubscription = await js.subscribe(
            subject,
            stream=self._settings.stream,
            cb=cb,
            ordered_consumer=True,
            config=config,
            idle_heartbeat=2.0,
        )
        return sub.unsubscribe

    async def leader_get(self, body: dict[str, object]) -> Row | None:
        """One message through the stream leader's ``STREAM.MSG.GET`` (consistent at any R)."""
        s = self._settings
        loop = asyncio.get_running_loop()
        give_up = loop.time() + s.election_window
        pause = 0.05
        while True:
            resp = await self._nc.request(
                f"$JS.API.STREAM.MSG.GET.{s.stream}", json.dumps(body).encode(), s.timeout
            )
            try:
                reply: dict[str, Any] = json.loads(resp.data)
            except ValueError as e:
                msg = f"unreadable STREAM.MSG.GET reply: {resp.data[:200]!r}"
                raise DatabaseError(msg) from e
            err = reply.get("error")
            if not err:
                break
            code = err.get("err_code")
            if code == _NO_MESSAGE:
                return None
            # A read may wait out a leader election (a cluster node lost): asked again, it is
            # answered as soon as the stream or the meta group has a leader, within the window.
            if code in _ELECTING and loop.time() + pause < give_up:
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.5)
                continue
            where = f"leader get {body}"
            raise api_error(code, err.get("code"), err.get("description", ""), where)
        m = reply["message"]
        seq = self._positions.seen(int(m["seq"]))
        return Row(seq, base64.b64decode(m.get("data") or ""), m["subject"])
