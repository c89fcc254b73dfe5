"""The outbox's stream on NATS JetStream: ``ORCHESTRATOR_EVENTS`` (``orchestration.>``).

Set-up follows Fleet's rule for every stream it creates (``natsio.ensure_stream``): created when
absent (file storage, ``FLEET_STREAM_REPLICAS`` copies, a two-minute duplicate window), replicas
raised and never lowered, nothing else of an existing one changed. A stream the seed system
made already (``ORCHESTRATOR_EVENTS``, or another name holding ``orchestration.>``) is used as
it is: its consumers keep reading where they were.

Messages go in windows, sent without waiting for each ack (``acks.AckWindow``). Each carries
``Nats-Expected-Last-Sequence`` (the first: the stream's last sequence as the outbox last saw
it; each next one: its predecessor's) and, but the first, ``Nats-Expected-Last-Msg-Id`` (its
predecessor's id): the server refuses a message unless it lands right behind the one before
it, so when anyone published meanwhile what landed is a first part of the window, nothing is
interleaved or doubled, and the outbox re-reads the tail and goes on from there. Each also
carries ``Nats-Msg-Id`` (``<event stream>:<idempotency key>``: within the duplicate window a
repeat is dropped by the server too), and the ``Fleet-Outbox-*`` headers the position is read
back from. After each batch, the last mark goes to the ``FLEET_OUTBOX`` key-value bucket:
should the stream's own limits drop Fleet's last messages (the seed's stream kept seven days),
the position survives there and nothing old is published again.

The writer's lease lives in the same bucket (key ``lease.<event stream>``: owner, epoch,
expiry), changed only by compare-and-set on the key's revision, so two instances cannot both
win a claim. Messages, lease and mark are all scoped to the Fleet event stream they come from
(``Fleet-Outbox-Source``), so Fleet installations sharing one NATS keep apart.

Sync API over an async client (the runner calls the projection from its own thread): every call
crosses to the loop of a ``Bridge``, where the connection lives (in Fleet, a loop thread of the
outbox's own, of the kind the event store uses: ``eventstore._loop_thread.LoopThread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import nats
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js.api import KeyValueConfig, PubAck, StorageType, StreamConfig
from nats.js.errors import (
    APIError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
)

from natsio import checked_replicas, ensure_stream, servers
from projectors.errors import PositionMovedError, ProjectionError
from projectors.fence import Fence, now_ms
from projectors.outbox.acks import AckWindow
from projectors.outbox.port import Mark, Outgoing, PublishedMessage

__all__ = [
    "AGENT_RESPONSES_MAX_AGE_S",
    "AGENT_RESPONSES_STREAM",
    "AGENT_RESPONSES_SUBJECTS",
    "OUTBOX_BUCKET",
    "OUTBOX_STREAM",
    "OUTBOX_SUBJECTS",
    "Bridge",
    "JetStreamOutboxStream",
    "OutboxUnavailableError",
]

T = TypeVar("T")

OUTBOX_STREAM = "ORCHESTRATOR_EVENTS"
OUTBOX_SUBJECTS = "orchestration.>"
OUTBOX_BUCKET = "FLEET_OUTBOX"
AGENT_RESPONSES_STREAM = "AGENT_RESPONSES"
AGENT_RESPONSES_SUBJECTS = "agent.response.>"
AGENT_RESPONSES_MAX_AGE_S = 3600.0
"""The seed's settings for ``AGENT_RESPONSES`` (file storage, an hour), used when Fleet makes it:
a stream of answers for consumers that read them within minutes, not a record (Fleet's own
event stream is that). The outbox's position survives the age limit in ``FLEET_OUTBOX``."""
DUPLICATE_WINDOW_S = 120.0

H_SOURCE = "Fleet-Outbox-Source"
H_POSITION = "Fleet-Outbox-Position"
H_INDEX = "Fleet-Outbox-Index"
H_COUNT = "Fleet-Outbox-Count"
H_KEY = "Nats-Msg-Id"
H_STREAM = "Nats-Expected-Stream"
H_LAST_SEQ = "Nats-Expected-Last-Sequence"
H_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"

_REFUSED = (10071, 10070)
"""Wrong last sequence, wrong last message id: the stream is not where the publish expected."""
_SCAN_LIMIT = 10_000
"""Messages read back from the stream's end for Fleet's last one (others may publish there)."""
_CALL_TIMEOUT_S = 10.0
_ACK_WAIT_S = 30.0
"""How long a window's acks may take once it is sent (a thousand messages on a loaded server)."""


class OutboxUnavailableError(ProjectionError):
    """The outbox's stream could not be reached; the runner retries (the position is re-read)."""


class Bridge(Protocol):
    """Runs a coroutine on the loop that owns the NATS connection, from another thread."""

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None) -> T: ...


class JetStreamOutboxStream:
    """``OutboxStream`` on JetStream. Call ``open``; every method blocks its (non-loop) caller.

    Args:
        nc: a NATS connection living on ``bridge``'s loop.
        bridge: crosses each call to that loop.
        source: the Fleet event stream whose events are published (names this installation's
            messages, lease and mark: installations sharing a NATS never mix positions).
        stream: the stream that holds ``orchestration.>``.
        kv: the ``FLEET_OUTBOX`` bucket (lease and mark).
        scope: names this outbox's lease and mark beside others publishing the same ``source``
            on other streams ("" for the integration events, ``agent-responses`` for those).
    """

    def __init__(
        self, nc: NATS, bridge: Bridge, *, source: str, stream: str, kv: Any, scope: str = ""
    ) -> None:
        self._nc = nc
        self.source = source
        self._js = nc.jetstream()
        self._bridge = bridge
        self.stream_name = stream
        self._kv = kv
        self._acks = AckWindow(nc)
        suffix = f".{scope}" if scope else ""
        self._lease_key = f"lease.{source}{suffix}"
        self._mark_key = f"mark.{source}{suffix}"

    @classmethod
    def open(
        cls,
        url: str,
        bridge: Bridge,
        *,
        source: str,
        replicas: int = 1,
        stream: str = OUTBOX_STREAM,
        subjects: str = OUTBOX_SUBJECTS,
        probe: str = "orchestration.deliberation.completed",
        max_age_s: float = 0.0,
        scope: str = "",
    ) -> JetStreamOutboxStream:
        """Connect on ``bridge``'s loop, make sure of the stream and the bucket.

        The stream that already holds ``probe`` (the seed system's, whatever its name) is used
        as it is; otherwise ``stream`` is made for ``subjects`` (``max_age_s`` 0: no age limit).
        The agent-results outbox passes ``AGENT_RESPONSES_*`` and ``scope="agent-responses"``.

        Raises:
            StreamSetupError: the server refused the stream (e.g. too many replicas).
        """
        opened = cls._open(url, bridge, source, replicas, stream, subjects, probe, max_age_s, scope)
        return bridge.run(opened, timeout=60.0)

    @classmethod
    async def _open(
        cls,
        url: str,
        bridge: Bridge,
        source: str,
        replicas: int,
        stream: str,
        subjects: str,
        probe: str,
        max_age_s: float,
        scope: str,
    ) -> JetStreamOutboxStream:
        nc = await nats.connect(servers(url), name="fleet-outbox", max_reconnect_attempts=-1)
        js = nc.jetstream()
        name = stream
        with contextlib.suppress(NotFoundError):  # the seed system's stream, whatever its name
            name = await js.find_stream_name_by_subject(probe)
        await ensure_stream(
            js,
            StreamConfig(
                name=name,
                subjects=[subjects],
                storage=StorageType.FILE,
                num_replicas=checked_replicas(replicas),
                duplicate_window=DUPLICATE_WINDOW_S,
                max_age=max_age_s or None,
            ),
        )
        kv = await _bucket(js, replicas)
        return cls(nc, bridge, source=source, stream=name, kv=kv, scope=scope)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._nc.close())

    # ------------------------------------------------------------------ position

    def tail(self) -> Mark:
        return self._call(self._tail())

    async def _tail(self) -> Mark:
        info = await self._js.stream_info(self.stream_name)
        last, first = info.state.last_seq, info.state.first_seq
        found = Mark(last, 0)
        seq = last
        while seq >= max(first, 1) and last - seq < _SCAN_LIMIT:
            try:
                msg = await self._js.get_msg(self.stream_name, seq)
            except NotFoundError:  # deleted by the stream's limits or an operator
                seq -= 1
                continue
            h = msg.headers or {}
            if h.get(H_SOURCE) == self.source:
                found = Mark(last, int(h[H_POSITION]), int(h[H_INDEX]), int(h[H_COUNT]))
                break
            seq -= 1
        kept = await self._kv_mark()
        if kept is not None and (kept.position, kept.index) > (found.position, found.index):
            return Mark(last, kept.position, kept.index, kept.count)
        return found

    async def _kv_mark(self) -> Mark | None:
        try:
            entry = await self._kv.get(self._mark_key)
        except KeyNotFoundError:
            return None
        data = json.loads(entry.value or b"{}")
        return Mark(0, int(data["position"]), int(data["index"]), int(data["count"]))

    # ------------------------------------------------------------------ publishing

    def publish_window(self, window: Sequence[Outgoing], *, expected: int) -> int:
        # The acks of a whole window may take longer than one call's; the window's own wait
        # gives up first (see ``_publish_window``), so the bridge's never cuts it short.
        timeout = _CALL_TIMEOUT_S + _ACK_WAIT_S
        return self._call(self._publish_window(window, expected), timeout=timeout)

    async def _publish_window(self, window: Sequence[Outgoing], expected: int) -> int:
        """Send every message of ``window`` at once, then read the acks in order.

        Message k expects the stream's last sequence to be ``expected + k``, and (k > 0) the
        last message id to be message k-1's. The sequence alone is not enough: should another
        publisher's message land where message k-1 was to go, k-1 is refused and k finds the
        sequence it expects (the foreign one's), and would land behind a gap. The message id
        check refuses it, and every one after it, so what lands is always a first part.
        """
        futures = []
        previous = ""
        for k, out in enumerate(window):
            # Scoped to the installation: two Fleets sharing a NATS (a test server, staging
            # beside production) may derive the same key; one must not swallow the other's.
            msg_id = f"{self.source}:{out.message.idempotency_key}"
            headers = {
                H_KEY: msg_id,
                H_SOURCE: self.source,
                H_STREAM: self.stream_name,
                H_LAST_SEQ: str(expected + k),
                H_POSITION: str(out.position),
                H_INDEX: str(out.index),
                H_COUNT: str(out.count),
            }
            if previous:
                headers[H_LAST_MSG_ID] = previous
            futures.append(await self._send(out.message.subject, out.message.body, headers))
            previous = msg_id
        acks = await self._acks.settle(futures, timeout=_ACK_WAIT_S)
        last = expected
        for out, ack in zip(window, acks, strict=True):
            if isinstance(ack, APIError) and ack.err_code in _REFUSED:
                mark = await self._tail()
                msg = f"outbox: stream {self.stream_name} moved past {last} ({ack.description})"
                raise PositionMovedError(msg, mark.position) from None
            if isinstance(ack, BaseException):
                raise ack
            if ack.duplicate:  # landed before (a lost ack): re-read where the stream stands
                mark = await self._tail()
                key = out.message.idempotency_key[:12]
                msg = f"outbox: {out.message.subject} {key} was there already"
                raise PositionMovedError(msg, mark.position)
            last = int(ack.seq)
        return last

    async def _send(
        self, subject: str, body: bytes, headers: dict[str, str]
    ) -> asyncio.Future[PubAck]:
        """One publish of a window, its ack to come (a seam for tests that slip a message in)."""
        return await self._acks.send(subject, body, headers)

    def keep(self, mark: Mark) -> None:
        kept = {"position": mark.position, "index": mark.index, "count": mark.count}
        self._call(self._kv.put(self._mark_key, json.dumps(kept).encode()))

    def retained_from(self) -> int:
        info = self._call(self._js.stream_info(self.stream_name))
        return max(int(info.state.first_seq), 1)

    def published(self) -> Iterator[PublishedMessage]:
        info = self._call(self._js.stream_info(self.stream_name))
        for seq in range(max(info.state.first_seq, 1), info.state.last_seq + 1):
            try:
                msg = self._call(self._js.get_msg(self.stream_name, seq))
            except NotFoundError:
                continue
            h = msg.headers or {}
            if h.get(H_SOURCE) == self.source:
                key = _body_key(msg.data or b"")  # the body's: a header copied elsewhere may lie
                yield PublishedMessage(
                    seq, str(msg.subject), key, int(h[H_POSITION]), int(h[H_INDEX])
                )

    # ------------------------------------------------------------------ the lease

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        return self._call(self._claim(owner, lease_ms))

    async def _claim(self, owner: str, lease_ms: int) -> Fence | None:
        now = now_ms()
        try:
            entry = await self._kv.get(self._lease_key)
        except KeyNotFoundError:
            entry = None
        try:
            if entry is None:
                new = {"owner": owner, "epoch": 1, "until": now + lease_ms}
                await self._kv.create(self._lease_key, json.dumps(new).encode())
                return Fence(owner, 1, lease_ms)
            held = json.loads(entry.value or b"{}")
            mine = held.get("owner") == owner
            if not mine and int(held.get("until", 0)) > now:
                return None
            epoch = int(held.get("epoch", 0)) + (0 if mine else 1)
            new = {"owner": owner, "epoch": epoch, "until": now + lease_ms}
            await self._kv.update(self._lease_key, json.dumps(new).encode(), last=entry.revision)
            return Fence(owner, epoch, lease_ms)
        except KeyWrongLastSequenceError:  # another instance claimed it meanwhile
            return None

    def release(self, owner: str) -> None:
        self._call(self._release(owner))

    async def _release(self, owner: str) -> None:
        with contextlib.suppress(KeyNotFoundError, KeyWrongLastSequenceError):
            entry = await self._kv.get(self._lease_key)
            held = json.loads(entry.value or b"{}")
            if held.get("owner") == owner:
                held["until"] = 0
                await self._kv.update(
                    self._lease_key, json.dumps(held).encode(), last=entry.revision
                )

    # ------------------------------------------------------------------ the bridge

    def _call(self, coro: Coroutine[Any, Any, T], *, timeout: float = _CALL_TIMEOUT_S) -> T:
        try:
            return self._bridge.run(coro, timeout=timeout)
        except (NatsError, TimeoutError) as e:
            if isinstance(e, APIError | NotFoundError):
                raise
            msg = f"outbox: stream {self.stream_name} unreachable: {e!r}"
            raise OutboxUnavailableError(msg) from e


def _body_key(data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return ""
    key = body.get("idempotency_key", "") if isinstance(body, dict) else ""
    return key if isinstance(key, str) else ""


async def _bucket(js: Any, replicas: int) -> Any:
    """The ``FLEET_OUTBOX`` bucket, made when absent with the replica rule of every stream
    Fleet makes (an existing one is raised, never lowered, and otherwise left as it is)."""
    config = KeyValueConfig(
        bucket=OUTBOX_BUCKET,
        history=1,
        storage=StorageType.FILE,
        replicas=checked_replicas(replicas),
    )
    with contextlib.suppress(NotFoundError):
        kv = await js.key_value(OUTBOX_BUCKET)
        await ensure_stream(
            js, StreamConfig(name=f"KV_{OUTBOX_BUCKET}", num_replicas=config.replicas)
        )
        return kv
    return await js.create_key_value(config)
