"""``fleet replay``: a deliberation's events read back from JetStream and folded, as a timeline."""

from __future__ import annotations

import argparse
import asyncio

from application.timeline import History, to_json
from fleet import render
from fleet.cli._common import Subparsers, console, reachable_event_store


def register(sub: Subparsers) -> None:
    rp = sub.add_parser("replay", help="read a deliberation's events back from JetStream and fold")
    rp.add_argument("task_id")
    rp.add_argument("--to-version", type=int, default=0, help="fold only up to this version")
    rp.add_argument("--data-dir")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(fn=cmd_replay)


async def cmd_replay(args: argparse.Namespace) -> None:
    from application.replay import replay

    url, stream = await reachable_event_store(args)
    h = await asyncio.to_thread(replay, url, stream, args.task_id, args.to_version)
    print_replay(h, args.task_id, as_json=args.json)


def print_replay(h: History, task_id: str, *, as_json: bool) -> None:
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
