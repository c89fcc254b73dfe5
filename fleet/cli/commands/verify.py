"""``fleet verify``: replay every deliberation and report where the graph or cache differs.

Runs in the node asked (VerifyProjections over gRPC); an API replica that cannot read every store
itself has the node running the projectors do it. Exit status 1 when any difference is found, or
when nothing was compared (a check that cannot fail is no check); 0 otherwise. The line printed
names the projections compared.
"""

from __future__ import annotations

import argparse
import json

from rich.text import Text

from fleet.cli._common import CliError, Subparsers, add_client_options, client, console


def register(sub: Subparsers) -> None:
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
    compared = sorted(resp.positions, key=lambda name: (name != "graph", name))  # graph first
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
            f"{resp.cache_misses} finished entries not cached (may have expired; read by replay)"
        )
        if differences:
            _print_differences(differences)
        elif compared:
            verb = "agree" if len(compared) > 1 else "agrees"
            names = " and ".join(filter(None, [", ".join(compared[:-1]), compared[-1]]))
            console.print(f"[green]{names} {verb} with the replay[/]")
    if not compared:
        raise CliError("the node compared no projection with the replay (it reads none)", code=1)
    if differences:
        raise CliError(f"{len(differences)} differences between projections and replay", code=1)


def _print_differences(differences: list[dict[str, str]]) -> None:
    """One heading per deliberation (task id and id), its differences indented below it.

    Details quote stored data (``[...]`` included), so everything is plain text, never markup.
    """
    console.print(f"{len(differences)} differences:")
    by_deliberation: dict[tuple[str, str], list[dict[str, str]]] = {}
    for d in differences:
        by_deliberation.setdefault((d["task_id"], d["deliberation_id"]), []).append(d)
    for (task_id, deliberation_id), found in by_deliberation.items():
        heading = f"{task_id or 'not in the log'} ({deliberation_id})"
        if not deliberation_id:
            heading = "nodes of no deliberation"
        console.print(Text(heading, style="bold"))
        for d in found:
            console.print(Text(f"  {d['projection']:<5}  {d['detail']}"))
