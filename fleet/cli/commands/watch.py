"""``fleet watch <task_id>``: follow a deliberation live (StreamDeliberation) to its end."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from fleet.cli._common import Subparsers, add_client_options, client

if TYPE_CHECKING:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def register(sub: Subparsers) -> None:
    w = sub.add_parser("watch", help="follow a deliberation live until it ends")
    add_client_options(w)
    w.add_argument("task_id", help="the deliberation's task id")
    w.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    w.set_defaults(fn=cmd_watch)


async def cmd_watch(args: argparse.Namespace) -> None:
    """People get the live view and then the result; ``--json`` prints one JSON object per
    update (NDJSON) and then the final result as one more line."""
    from google.protobuf.json_format import MessageToDict

    from fleet.cli.commands.deliberations import follow, print_result, wait_with_progress

    async with client(args) as c:
        if not args.json:
            print_result(await wait_with_progress(c, args.task_id, args.timeout, False), False)
            return

        def emit(u: pb.DeliberationUpdate) -> None:
            print(json.dumps(MessageToDict(u, preserving_proto_field_name=True)), flush=True)

        await follow(c, args.task_id, args.timeout, emit)
        final = await c.wait(args.task_id, timeout=30)
        print(json.dumps(MessageToDict(final, preserving_proto_field_name=True)))
