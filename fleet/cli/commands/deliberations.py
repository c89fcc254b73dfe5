"""``fleet deliberate`` and ``fleet result``: submit work and read its outcome."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fleet import render
from fleet.cli._common import add_client_options, api_address, console


def register(sub: Any) -> None:
    d = sub.add_parser("deliberate", help="submit a deliberation")
    add_client_options(d)
    d.add_argument("task", help="the task text")
    d.add_argument("--role", default="DEV", help="DEV, QA, ARCHITECT, DEVOPS or DATA")
    d.add_argument("--agents", type=int, default=3, help="agents on the council (1..16)")
    d.add_argument("--rounds", type=int, default=1, help="rounds (1..5)")
    d.add_argument("--task-id", help="your id for it (idempotent); generated when absent")
    d.add_argument(
        "--timeout", type=int, help="seconds to TIMEOUT (default DELIBERATION_TIMEOUT)"
    )
    d.add_argument("--wait", action="store_true", help="wait for the result, showing progress")
    d.add_argument("--wait-timeout", type=float, default=900.0)
    d.set_defaults(fn=cmd_deliberate)

    r = sub.add_parser("result", help="status and results of a deliberation")
    add_client_options(r)
    r.add_argument("task_id")
    r.set_defaults(fn=cmd_result)


async def cmd_deliberate(args: argparse.Namespace) -> None:
    from fleet.client import FleetClient, status_name

    async with FleetClient(api_address(args)) as client:
        resp = await client.deliberate(
            args.task,
            role=args.role,
            num_agents=args.agents,
            rounds=args.rounds,
            task_id=args.task_id or "",
            timeout_seconds=args.timeout or 0,
        )
        if not args.wait:
            if args.json:
                print(json.dumps({"task_id": resp.task_id, "status": status_name(resp.status)}))
            else:
                console.print(f"task [bold]{resp.task_id}[/] {status_name(resp.status)}")
            return
        final = await wait_with_progress(client, resp.task_id, args.wait_timeout, args.json)
        print_result(final, args.json)


async def cmd_result(args: argparse.Namespace) -> None:
    from fleet.client import FleetClient

    async with FleetClient(api_address(args)) as client:
        print_result(await client.result(args.task_id), args.json)


async def wait_with_progress(client: Any, task_id: str, timeout: float, quiet: bool) -> Any:
    """Wait for a terminal status, with a live line of status and proposals for people."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from fleet.client import status_name

    if quiet:
        return await client.wait(task_id, timeout=timeout)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:  # fmt: skip
        bar = progress.add_task(f"deliberation {task_id}", total=None, info="PENDING")

        def update(r: Any) -> None:
            progress.update(bar, info=f"{status_name(r.status)} · {len(r.results)} proposal(s)")

        return await client.wait(task_id, timeout=timeout, on_update=update)


def print_result(r: Any, as_json: bool) -> None:
    if as_json:
        from google.protobuf.json_format import MessageToDict

        print(json.dumps(MessageToDict(r, preserving_proto_field_name=True), indent=2))
    else:
        render.result(console, r)
