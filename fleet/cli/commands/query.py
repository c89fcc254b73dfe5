"""``fleet query``: read-only Cypher over the deliberation history (through QueryHistory)."""

from __future__ import annotations

import argparse
import json

from fleet import render
from fleet.cli._common import CliError, Subparsers, add_client_options, client, console


def register(sub: Subparsers) -> None:
    q = sub.add_parser("query", help="read-only Cypher over the deliberation history")
    add_client_options(q)
    q.add_argument("cypher", help="a read-only Cypher query")
    q.add_argument("--param", action="append", help="NAME=VALUE (VALUE as JSON, or a bare string)")
    q.add_argument("--limit", type=int, default=0, help="row limit (default 1000)")
    q.set_defaults(fn=cmd_query)


def parse_params(pairs: list[str] | None) -> dict[str, object]:
    params: dict[str, object] = {}
    for p in pairs or []:
        name, sep, raw = p.partition("=")
        if not sep or not name:
            raise CliError(f"--param {p!r}: expected NAME=VALUE", code=2)
        try:
            params[name] = json.loads(raw)
        except json.JSONDecodeError:
            params[name] = raw  # a bare word is a string
    return params


async def cmd_query(args: argparse.Namespace) -> None:
    params = parse_params(args.param)
    async with client(args) as api:
        columns, data, truncated = await api.query(args.cypher, params, args.limit)
    if args.json:
        from application.timeline import to_json

        print(to_json({"columns": columns, "rows": data, "truncated": truncated}))
        return
    render.rows(console, columns, data)
    if truncated:
        console.print(f"[yellow]truncated at {len(data)} rows (--limit)[/]")
