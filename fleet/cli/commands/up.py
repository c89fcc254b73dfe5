"""``fleet up`` (the whole system in one process) and ``fleet demo`` (the main job, end to end)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Any

from fleet import render
from fleet.cli._common import CliError, Subparsers, console, settings
from lifecycle.collector import tune_collector

if TYPE_CHECKING:
    from fleet.bootstrap import FleetNode

log = logging.getLogger(__name__)


def register(sub: Subparsers) -> None:
    up = sub.add_parser("up", help="run the whole system (embedded parts for anything not set)")
    up.add_argument("--data-dir", help="where embedded servers keep their data (default .fleet)")
    up.add_argument("--grpc-port", type=int, help="the API's port (FLEET_GRPC_PORT, default 50055)")
    up.add_argument("--grpc-host", help="the API's interface (FLEET_GRPC_HOST, default 127.0.0.1)")
    up.add_argument(
        "--components",
        help="parts to run, comma-separated: api,dispatcher,projectors,agents,web (default all; "
        "FLEET_COMPONENTS). dispatcher implies agents; the event store is always connected",
    )
    up.add_argument("--metrics-port", type=int, help="Prometheus /metrics port (0: off)")
    up.add_argument(
        "--agent-backend",
        choices=("ray", "nats"),
        help="ray: warm Ray actors (default); nats: a JetStream work queue served by workers "
        "(in this process, FLEET_LOCAL_WORKERS per role, and any `fleet worker`)",
    )
    up.add_argument(
        "--graph",
        choices=("ladybug", "neo4j"),
        help="the graph engine (FLEET_GRAPH): ladybug, embedded (default); neo4j: the server at "
        "FLEET_NEO4J_URI, or a private one from the jars `make neo4j` resolved",
    )
    up.set_defaults(fn=cmd_up)

    demo = sub.add_parser("demo", help="one deliberation on the embedded system, end to end")
    demo.add_argument("--data-dir", help="default .fleet/demo")
    demo.add_argument(
        "--grpc-port", type=int, help="the API's port (FLEET_GRPC_PORT, default 50055)"
    )
    demo.set_defaults(fn=cmd_demo)


async def cmd_up(args: argparse.Namespace) -> None:
    from fleet import logs
    from fleet.api_process import receive_environment
    from fleet.bootstrap import FleetNode
    from fleet.config import parse_components

    await receive_environment()  # a node's API process, launched ahead of its settings

    overrides: dict[str, Any] = {
        "metrics_port": args.metrics_port,
        "agent_backend": args.agent_backend,
        "graph": args.graph,
    }
    if args.components:
        overrides["components"] = parse_components(args.components)
    s = settings(args, **overrides)
    logs.configure(logging.getLogger().level, s.log_format)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signals() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

    on_signals()
    with console.status("starting Fleet…") as status:
        node = FleetNode(s, on_stage=lambda name, dt: status.update(f"{name} ready ({dt:.1f} s)…"))
        await node.start()
    # Again: ray.init installs its own fatal-signal handler (it aborts the process on SIGTERM),
    # which would skip the clean stop below.
    on_signals()
    tune_collector()
    failure: str | None = None
    try:
        print_endpoints(node)
        console.print("[green]Fleet is up.[/] Ctrl-C stops it; the next start resumes.")
        failure = await _until_stopped_or_failed(stop, node)
    finally:
        with console.status("stopping Fleet…"):
            await node.close()
    if failure is not None:
        # Non-zero, so a supervisor (systemd, Kubernetes) restarts it; the events hold the work.
        raise CliError(f"Fleet stopped because a part failed: {failure}", code=1)
    console.print("stopped.")


async def _until_stopped_or_failed(stop: asyncio.Event, node: FleetNode) -> str | None:
    """Wait for a signal (None) or for a part of the node to fail (its reason)."""
    stopped = asyncio.create_task(stop.wait())
    failed = asyncio.create_task(node.wait_failed())
    done, pending = await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
    for t in pending:
        t.cancel()
    if failed in done:
        reason: str = failed.result()
        log.error("%s", reason)
        return reason
    return None


async def cmd_demo(args: argparse.Namespace) -> None:
    from fleet.demo import run_demo

    overrides: dict[str, Any] = {}
    if not args.data_dir:
        overrides["data_dir"] = settings(args).data_dir / "demo"
    await run_demo(settings(args, **overrides), console)


def print_endpoints(node: FleetNode) -> None:
    console.print(render.endpoints(node.endpoints, node.stage_seconds))
