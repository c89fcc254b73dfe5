"""``fleet deliberate`` and ``fleet result``: submit work and read its outcome.

``--wait`` follows the deliberation over StreamDeliberation with a live view of each agent; a
stream cut by a node going away is resumed (the server replays, the view folds idempotently).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from fleet import render
from fleet.cli._common import (
    CliError,
    Subparsers,
    add_client_options,
    add_task_arguments,
    client,
    console,
)

if TYPE_CHECKING:
    from fleet.client import FleetClient
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

RESUME_CODES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def register(sub: Subparsers) -> None:
    d = sub.add_parser("deliberate", help="submit a deliberation")
    add_client_options(d)
    add_task_arguments(d)
    d.add_argument("--agents", type=int, default=3, help="agents on the council (1..16)")
    d.add_argument("--rounds", type=int, default=0, help="rounds (1..5; 0: the council's)")
    d.add_argument("--task-id", help="your id for it (idempotent); generated when absent")
    d.add_argument("--timeout", type=int, help="seconds to TIMEOUT (default DELIBERATION_TIMEOUT)")
    d.add_argument("--wait", action="store_true", help="wait for the result, showing progress")
    d.add_argument(
        "--wait-timeout",
        type=float,
        default=900.0,
        help="with --wait: give up after this many seconds",
    )
    d.add_argument(
        "--tests",
        metavar="FILE",
        help="acceptance tests (pytest-style Python, `from solution import …`) every DEV "
        "candidate runs against in the sandbox",
    )
    d.set_defaults(fn=cmd_deliberate)

    r = sub.add_parser("result", help="status and results of a deliberation")
    add_client_options(r)
    r.add_argument("task_id", help="the deliberation's task id")
    r.set_defaults(fn=cmd_result)


async def cmd_deliberate(args: argparse.Namespace) -> None:
    from fleet.client import status_name

    tests = _read_tests(args.tests) if args.tests else ""
    async with client(args) as c:
        resp = await c.deliberate(
            args.task,
            role=args.role,
            num_agents=args.agents,
            rounds=args.rounds,
            task_id=args.task_id or "",
            timeout_seconds=args.timeout or 0,
            acceptance_tests=tests,
        )
        if not args.wait:
            if args.json:
                print(json.dumps({"task_id": resp.task_id, "status": status_name(resp.status)}))
            else:
                console.print(f"task [bold]{resp.task_id}[/] {status_name(resp.status)}")
            return
        final = await wait_with_progress(c, resp.task_id, args.wait_timeout, args.json)
        print_result(final, args.json)


def _read_tests(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"--tests {path}: {e.strerror if isinstance(e, OSError) else e}") from None


async def cmd_result(args: argparse.Namespace) -> None:
    async with client(args) as c:
        print_result(await c.result(args.task_id), args.json)


async def follow(
    c: FleetClient,
    task_id: str,
    timeout: float,
    on_update: Callable[[pb.DeliberationUpdate], None] | None = None,
    *,
    retries: int = 5,
) -> None:
    """Consume the deliberation's stream to its end, resuming when a node goes away."""
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        try:
            async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                async for u in c.stream(task_id):
                    if on_update is not None:
                        on_update(u)
            return
        except TimeoutError:
            raise CliError(f"task {task_id} not finished after {timeout:g} s") from None
        except grpc.aio.AioRpcError as e:
            attempt += 1
            if e.code() not in RESUME_CODES or attempt > retries:
                raise
            await asyncio.sleep(min(5.0, 0.5 * 2**attempt))


async def wait_with_progress(
    c: FleetClient, task_id: str, timeout: float, quiet: bool
) -> pb.GetDeliberationResultResponse:
    """Follow to a terminal state (a live view of each agent for people) and return the result.

    The result is read after the stream ends; the cache may trail the stream by a moment, so
    ``wait`` polls the few milliseconds until it shows the terminal state too.
    """
    t0 = time.monotonic()
    if quiet:
        await follow(c, task_id, timeout)
    else:
        from rich.live import Live

        view = render.LiveProgress(task_id)
        with Live(view, console=console, refresh_per_second=8, transient=False) as live:

            def update(u: pb.DeliberationUpdate) -> None:
                view.apply(u)
                live.update(view)

            await follow(c, task_id, timeout, update)
    return await c.wait(task_id, timeout=max(5.0, timeout - (time.monotonic() - t0)))


def print_result(r: pb.GetDeliberationResultResponse, as_json: bool) -> None:
    if as_json:
        from google.protobuf.json_format import MessageToDict

        print(json.dumps(MessageToDict(r, preserving_proto_field_name=True), indent=2))
    else:
        render.result(console, r)
