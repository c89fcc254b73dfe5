"""``fleet events tail``: follow the JetStream event stream live, one readable line per event.

Reads the application sequence (the stream's event subjects) from the event store directly, so it
works without the gRPC API. Each line: stream sequence, time, aggregate id, event type and a short
summary (the same summaries as ``fleet replay``); ``--json`` prints one JSON object per line. A
message that cannot be decoded is reported on stderr with its sequence and subject, and the tail
goes on. Ctrl-C stops it cleanly.

A server that cannot be reached fails the command within seconds, in one line naming the URL
(its password masked): the event store's own connection retries for as long as it takes, as a
long-running reader must across a server restart, so the tail first checks with one quick
connection of its own that the server answers at all.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from typing import TYPE_CHECKING, cast

from fleet.cli._common import Subparsers, reachable_event_store

if TYPE_CHECKING:
    from uuid import UUID

    from eventsourcing.persistence import ApplicationRecorder, Subscription

    from application.app import FleetApplication
    from application.events import FleetEvent
    from eventstore.jetstream import JetStreamApplicationRecorder

"""How long the first connect waits for the server's greeting (a refused port fails at once)."""


def register(sub: Subparsers) -> None:
    ev = sub.add_parser("events", help="the event stream in JetStream")
    esub = ev.add_subparsers(dest="events_command", required=True, metavar="SUBCOMMAND")
    t = esub.add_parser("tail", help="follow the event stream live (Ctrl-C stops)")
    t.add_argument(
        "--from-seq",
        type=int,
        default=0,
        metavar="N",
        help="start at stream sequence N (default: only events stored from now on)",
    )
    t.add_argument("--count", type=int, default=0, metavar="N", help="exit after N events")
    t.add_argument("--data-dir", help="where `fleet up` keeps its data (default .fleet)")
    t.add_argument("--json", action="store_true", help="one JSON object per line")
    t.set_defaults(fn=cmd_tail)


async def cmd_tail(args: argparse.Namespace) -> None:
    from application.app import jetstream_application

    url, stream = await reachable_event_store(args)
    app = await asyncio.to_thread(jetstream_application, url, stream)
    try:
        if args.from_seq > 0:
            gt: int | None = args.from_seq - 1
        else:
            gt = await asyncio.to_thread(app.recorder.max_notification_id)
        subscription = await asyncio.to_thread(app.recorder.subscribe, gt)
        try:
            await asyncio.to_thread(_follow, app, subscription, args)
        finally:
            subscription.stop()  # wakes the reading thread on Ctrl-C (the task is cancelled)
    finally:
        await _close_within(app, CLOSE_WAIT_S)


CLOSE_WAIT_S = 10.0
"""How long a stopping tail waits for the event store to close before it exits anyway: a tail
only reads, so nothing is lost, and Ctrl-C must end it promptly."""


async def _close_within(app: FleetApplication, seconds: float) -> None:
    """Close ``app`` on a thread of its own, waiting at most ``seconds`` (a daemon thread: the
    process's exit does not wait for a close that hangs)."""
    closer = threading.Thread(target=app.close, name="events-tail-close", daemon=True)
    closer.start()
    await asyncio.to_thread(closer.join, seconds)
    if closer.is_alive():
        print(f"warning: the event store did not close in {seconds:.0f} s", file=sys.stderr)


def _follow(
    app: FleetApplication, subscription: Subscription[ApplicationRecorder], args: argparse.Namespace
) -> None:
    from eventsourcing.persistence import DataError

    shown = 0
    while True:
        try:
            notification = next(subscription)
        except StopIteration:
            return
        except DataError as e:  # names the stream sequence and subject
            print(f"error: {e}", file=sys.stderr, flush=True)
            continue
        try:
            # the mapper decodes Fleet's stream: its events are Fleet's aggregate events
            event = cast("FleetEvent", app.mapper.to_domain_event(notification))
            line = _line(notification.id, event, as_json=args.json)
        except Exception as e:  # an event of a type this Fleet does not know, or bad state
            subject = _subject(app, notification.originator_id)
            print(
                f"error: cannot decode event at stream sequence {notification.id} on subject "
                f"{subject!r} ({notification.topic}, aggregate {notification.originator_id} "
                f"v{notification.originator_version}): {e!r}",
                file=sys.stderr,
                flush=True,
            )
            continue
        print(line, flush=True)
        shown += 1
        if args.count and shown >= args.count:
            return


def _subject(app: FleetApplication, originator_id: UUID | str) -> str:
    """The stream subject the event was read from (the JetStream recorder's layout), so the
    report points at the message as the store's own DataError does."""
    recorder = cast("JetStreamApplicationRecorder", app.recorder)  # cmd_tail opens it on JetStream
    return str(recorder.connection.subject(recorder.kind, originator_id))


def _line(seq: int, event: FleetEvent, *, as_json: bool) -> str:
    from application.timeline import entry, to_json

    e = entry(event)
    if as_json:
        return to_json(
            {
                "seq": seq,
                "at": e.at,
                "aggregate_id": event.originator_id,
                "version": e.version,
                "type": e.type,
                "summary": e.summary,
                "data": e.data,
            }
        )
    at = e.at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return f"{seq:>8}  {at}  {event.originator_id}  v{e.version:<3} {e.type:<22} {e.summary}"
