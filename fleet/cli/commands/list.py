"""``fleet list``: deliberations, newest first, filtered by status, role, plan and time."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime, timedelta

from fleet import render
from fleet.cli._common import (
    ROLES,
    CliError,
    Subparsers,
    add_client_options,
    client,
    console,
    offer,
)

_AGO = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
STATUSES = ("PENDING", "IN_PROGRESS", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED")


def register(sub: Subparsers) -> None:
    p = sub.add_parser("list", help="list deliberations, newest first")
    add_client_options(p)
    p.add_argument("--status", type=str.upper, choices=STATUSES, help="only this status")
    offer(p.add_argument("--role", metavar="ROLE", help="only this role"), ROLES)
    p.add_argument("--plan", help="only deliberations this plan spawned")
    p.add_argument("--since", help="created at or after: 30m, 2h, 7d or an ISO time")
    p.add_argument("--until", help="created before: 30m, 2h, 7d or an ISO time")
    p.add_argument("--limit", type=int, default=50, help="page size (1..500)")
    p.add_argument("--page-token", default="", help="continue from a previous page")
    p.add_argument("--all", action="store_true", help="follow every page")
    p.set_defaults(fn=cmd_list)


def parse_time(raw: str | None, flag: str) -> int:
    """Milliseconds since the epoch for '30m'/'2h'/'7d' ago or an ISO time; 0 when absent."""
    if not raw:
        return 0
    m = _AGO.match(raw.strip())
    if m:
        t = datetime.now(tz=UTC) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    else:
        try:
            t = datetime.fromisoformat(raw)
        except ValueError:
            raise CliError(f"{flag} {raw!r}: expected 30m, 2h, 7d or an ISO time", code=2) from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


async def cmd_list(args: argparse.Namespace) -> None:
    from google.protobuf.json_format import MessageToDict

    if not 1 <= args.limit <= 500:
        raise CliError(f"--limit {args.limit}: not in 1..500", code=2)
    query = {
        "status": args.status or "",
        "role": args.role or "",
        "plan_id": args.plan or "",
        "created_after_ms": parse_time(args.since, "--since"),
        "created_before_ms": parse_time(args.until, "--until"),
        "page_size": args.limit,
    }
    token = args.page_token
    rows: list[dict[str, object]] = []
    async with client(args) as c:
        while True:
            resp = await c.list(**query, page_token=token)
            if args.json:
                rows += [
                    MessageToDict(d, preserving_proto_field_name=True) for d in resp.deliberations
                ]
            else:
                render.deliberation_list(console, resp)
            token = resp.next_page_token
            if not (args.all and token):
                break
    if args.json:
        print(json.dumps({"deliberations": rows, "next_page_token": token}, indent=2))
