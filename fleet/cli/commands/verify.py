"""``fleet verify``: replay every deliberation and report where the graph or cache differs.

Runs in the node (VerifyProjections over gRPC), which holds both stores and the event store.
Exit status 1 when any difference is found, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table
from rich.text import Text

from fleet.cli._common import CliError, add_client_options, client, console


def register(sub: Any) -> None:
    v = sub.add_parser(
        "verify", help="compare the graph and the cache with a replay of every event"
    )
    add_client_options(v)
    v.add_argument("--timeout", type=float, default=600.0, help="RPC deadline in seconds")
    v.set_defaults(fn=cmd_verify)


async def cmd_verify(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    async with client(args, timeout=args.timeout) as api:
        resp = await api.stub.VerifyProjections(pb.VerifyProjectionsRequest(), timeout=args.timeout)
    differences = [
        {"projection": d.projection, "deliberation_id": d.deliberation_id,
         "task_id": d.task_id, "detail": d.detail}
        for d in resp.differences
    ]  # fmt: skip
    if args.json:
        out = {
            "stream_head": resp.stream_head,
            "deliberations": resp.deliberations,
            "positions": dict(resp.positions),
            "cache_misses": resp.cache_misses,
            "differences": differences,
        }
        print(json.dumps(out, indent=2))
    else:
        where = ", ".join(f"{k} at {v}" for k, v in sorted(resp.positions.items()))
        console.print(
            f"{resp.deliberations} deliberations replayed up to {resp.stream_head} ({where}); "
            f"{resp.cache_misses} not cached (read by replay)"
        )
        if differences:
            table = Table(title=f"{len(differences)} differences")
            for column in ("projection", "task", "deliberation", "detail"):
                table.add_column(column)
            for d in differences:
                # Details quote stored data (``[...]`` included): plain text, never markup.
                table.add_row(
                    *(
                        Text(str(d[k]))
                        for k in ("projection", "task_id", "deliberation_id", "detail")
                    )
                )
            console.print(table)
        else:
            console.print("[green]graph and cache agree with the replay[/]")
    if differences:
        raise CliError(f"{len(differences)} differences between projections and replay", code=1)
