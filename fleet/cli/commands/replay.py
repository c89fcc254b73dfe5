"""``fleet replay``: a deliberation's events read back from JetStream and folded, as a timeline;
``fleet replay --council ROLE``: a council's, with its members over time."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from fleet import render
from fleet.cli._common import CliError, Subparsers, console, reachable_event_store

if TYPE_CHECKING:
    from application.timeline import History


def register(sub: Subparsers) -> None:
    rp = sub.add_parser("replay", help="read a deliberation's events back from JetStream and fold")
    rp.add_argument("task_id", nargs="?", default="", help="the deliberation's task id")
    rp.add_argument("--council", metavar="ROLE", default="", help="replay this role's council")
    rp.add_argument("--to-version", type=int, default=0, help="fold only up to this version")
    rp.add_argument("--data-dir", help="where `fleet up` keeps its data (default .fleet)")
    rp.add_argument("--json", action="store_true", help="machine-readable output")
    rp.set_defaults(fn=cmd_replay)


async def cmd_replay(args: argparse.Namespace) -> None:
    from application.replay import replay

    if bool(args.council) == bool(args.task_id):
        raise CliError("give a task id, or --council ROLE (not both)")
    url, stream = await reachable_event_store(args)
    if args.council:
        await _replay_council(url, stream, args)
        return
    h = await asyncio.to_thread(replay, url, stream, args.task_id, args.to_version)
    print_replay(h, args.task_id, as_json=args.json)


def print_replay(h: History, task_id: str, *, as_json: bool) -> None:
    from application.timeline import to_json

    d = h.deliberation
    if as_json:
        proposals = [
            {"agent_id": p.agent_id, "round": p.round, "content": p.content, "score": p.score}
            for p in d.final_proposals().values()
        ]
        events = [
            {"version": e.version, "type": e.type, "at": e.at, "data": e.data} for e in h.entries
        ]
        print(
            to_json(
                {
                    "task_id": task_id,
                    "deliberation_id": str(d.id),
                    "version": d.version,
                    "status": d.status.value,
                    "winner": d.winner,
                    "ranking": d.ranking,
                    "agents": list(d.agents),
                    "seats": d.seats,
                    "council_version": d.council_version,
                    "proposals": proposals,
                    "events": events,
                }
            )
        )
        return
    render.timeline(console, h.entries, title=f"Replayed timeline of {task_id} ({d.id})")
    console.print(
        f"folded state at version {d.version}: status ", render.status_text(d.status.value),
        f", winner {d.winner or '-'}, {len(d.final_proposals())} proposal(s)",
    )  # fmt: skip


async def _replay_council(url: str, stream: str, args: argparse.Namespace) -> None:
    from rich.table import Table
    from rich.text import Text

    from application.replay import replay_council

    c, events = await asyncio.to_thread(replay_council, url, stream, args.council, args.to_version)
    rows = [
        {
            "version": e.originator_version,
            "type": type(e).__name__,
            "at": e.timestamp.isoformat(),
            "agent_id": str(getattr(e, "agent_id", "")),
        }
        for e in events
    ]
    members = [
        {"agent_id": m.agent_id, "model": m.model, "endpoint": m.endpoint}
        for m in c.members.values()
    ]
    if args.json:
        from application.timeline import to_json

        out = {
            "role": c.role.value,
            "council_id": str(c.id),
            "version": c.version,
            "deleted": c.deleted,
            "members": members,
            "events": rows,
        }
        print(to_json(out))
        return
    table = Table("version", "event", "at", "agent", title=f"{c.role.value} council ({c.id})")
    for r in rows:
        table.add_row(str(r["version"]), str(r["type"]), str(r["at"]), Text(str(r["agent_id"])))
    console.print(table)
    state = "deleted" if c.deleted else ", ".join(m["agent_id"] for m in members) or "no members"
    console.print(Text(f"folded state at version {c.version}: {state}"))
