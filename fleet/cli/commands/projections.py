"""``fleet projections status|rebuild``: where each projection stands, and rebuilding one.

Both talk to the running node over gRPC (GetNodeStatus, RebuildProjection): the node is the one
writer of its stores (the embedded graph is a directory only one process may open), so a rebuild
happens in it, fenced like any other write, while readers fall back to replays. Rebuilding the
outbox deletes nothing (its messages are the consumers'): it publishes only what is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from typing import TYPE_CHECKING, TypedDict

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fleet.cli._common import CliError, Subparsers, add_client_options, client, console

if TYPE_CHECKING:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

_POLL_S = 0.25


def register(sub: Subparsers) -> None:
    p = sub.add_parser("projections", help="projection status (position, lag) and rebuild")
    psub = p.add_subparsers(dest="projections_command", required=True, metavar="ACTION")
    status = psub.add_parser(
        "status", help="position, stream head and lag of each projection; the node's sandbox"
    )
    add_client_options(status)
    status.set_defaults(fn=cmd_status)
    rebuild = psub.add_parser("rebuild", help="rebuild a projection from sequence 1")
    add_client_options(rebuild)
    rebuild.add_argument("name", choices=("graph", "cache", "outbox"), help="the projection")
    rebuild.add_argument(
        "--timeout", type=float, default=3600.0, help="give up waiting after this many seconds"
    )
    rebuild.set_defaults(fn=cmd_rebuild)


class _SandboxJson(TypedDict):
    mode: str
    available: bool
    reason: str
    slots: int
    """Runs at once in each process that runs checks (0: none, or a node older than the field)."""
    cpus: str
    """The CPUs such a process may use, which its slots are sized by."""


def _sandbox(resp: pb.GetNodeStatusResponse) -> _SandboxJson | None:
    """Where the node's agent checks run model code; None: not that node's to know."""
    if not resp.HasField("sandbox"):
        return None
    b = resp.sandbox
    return {
        "mode": b.mode,
        "available": b.available,
        "reason": b.reason,
        "slots": b.slots,
        "cpus": b.cpus,
    }


def _status_json(resp: pb.GetNodeStatusResponse) -> dict[str, object]:
    return {
        "stream_head": resp.stream_head,
        "sandbox": _sandbox(resp),
        "projections": [
            {
                "name": p.name,
                "position": p.position,
                "lag_events": p.lag_events,
                "lag_seconds": None if math.isnan(p.lag_seconds) else p.lag_seconds,
            }
            for p in resp.projections
        ],
    }


async def cmd_status(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    async with client(args) as api:
        resp = await api.stub.GetNodeStatus(pb.GetNodeStatusRequest(), timeout=30)
    if args.json:
        print(json.dumps(_status_json(resp), indent=2))
        return
    table = Table(title=f"stream head {resp.stream_head}")
    for column in ("projection", "position", "lag (events)", "lag (s)"):
        table.add_column(column, justify="left" if column == "projection" else "right")
    for p in resp.projections:
        seconds = "?" if math.isnan(p.lag_seconds) else f"{p.lag_seconds:.2f}"
        table.add_row(p.name, str(p.position), str(p.lag_events), seconds)
    if not resp.projections:
        console.print("[yellow]this node runs no projections[/]")
    console.print(table)
    box = _sandbox(resp)
    if box is None:
        console.print("sandbox: not known on this node (no agents here, or `fleet worker`s)")
    elif box["available"]:
        n = box["slots"]
        sized = f", {n} run{'s' * (n != 1)} at once per process for {box['cpus']}" if n else ""
        console.print(f"sandbox: bubblewrap (FLEET_SANDBOX={box['mode']}){sized}", highlight=False)
    else:
        console.print(
            f"[red]sandbox unavailable[/] (FLEET_SANDBOX={box['mode']}): {escape(box['reason'])}; "
            "DEV checks say 'not run'",
            markup=True,
            highlight=False,
        )


async def cmd_rebuild(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    async with client(args) as api:
        started = await api.stub.RebuildProjection(
            pb.RebuildProjectionRequest(name=args.name), timeout=60
        )
        target = started.target
        deadline = time.monotonic() + args.timeout
        position = 0
        with Progress(
            TextColumn(f"rebuilding {args.name}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=args.json,
        ) as progress:
            task = progress.add_task(args.name, total=max(target, 1))
            while True:
                resp = await api.stub.GetNodeStatus(pb.GetNodeStatusRequest(), timeout=30)
                mine = [p for p in resp.projections if p.name == args.name]
                if not mine:
                    raise CliError(f"projection {args.name} disappeared from the node's status")
                position = mine[0].position
                progress.update(task, completed=min(position, target))
                if position >= target:
                    break
                if time.monotonic() > deadline:
                    raise CliError(f"{args.name} at {position} of {target} after {args.timeout} s")
                await asyncio.sleep(_POLL_S)
    if args.json:
        print(json.dumps({"name": args.name, "target": target, "position": position}))
    else:
        console.print(f"{args.name}: rebuilt up to {position} (target {target})")
