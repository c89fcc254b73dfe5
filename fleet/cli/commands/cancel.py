"""``fleet cancel <task_id>``: end an open deliberation as CANCELLED."""

from __future__ import annotations

import argparse
import json

from fleet import render
from fleet.cli._common import Subparsers, add_client_options, client, console


def register(sub: Subparsers) -> None:
    c = sub.add_parser("cancel", help="cancel an open deliberation")
    add_client_options(c)
    c.add_argument("task_id", help="the deliberation's task id")
    c.add_argument("--reason", default="", help="why (recorded in the Cancelled event)")
    c.set_defaults(fn=cmd_cancel)


async def cmd_cancel(args: argparse.Namespace) -> None:
    """An already finished deliberation is FAILED_PRECONDITION (exit 1), an unknown one
    NOT_FOUND (exit 1)."""
    from fleet.client import status_name

    async with client(args) as c:
        resp = await c.cancel(args.task_id, args.reason)
    if args.json:
        print(json.dumps({"task_id": resp.task_id, "status": status_name(resp.status)}))
    else:
        console.print("task ", f"[bold]{resp.task_id}[/] ", render.status_text(resp.status))
