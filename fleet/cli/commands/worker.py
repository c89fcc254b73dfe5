"""``fleet worker``: serve agent calls from the NATS work queue (``FLEET_AGENT_BACKEND=nats``).

Start as many as the load needs, on any machine that reaches NATS and the model endpoint; the
workers of a role share one durable consumer, so each call goes to one of them. SIGTERM lets
in-flight calls finish (``--drain`` seconds) and hands the rest back to the queue at once.
With ``FLEET_METRICS_PORT`` it serves ``/metrics`` with its roles' queue depth
(``fleet_agent_pending_calls{role,state}``): what an autoscaler of worker pods reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from typing import TYPE_CHECKING, Any

from fleet.cli._common import CliError, Subparsers, console, data_dir, settings

if TYPE_CHECKING:
    from agent_runtime.nats_backend.runtime import QueueNames
    from fleet.config import Settings


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "worker",
        help="serve agent calls from the NATS work queue (nats backend)",
    )
    p.add_argument(
        "--role",
        action="append",
        help="role to serve (repeat for several; 'all' for every role; default all)",
    )
    p.add_argument("--concurrency", type=int, help="calls in flight per role (FLEET_WORKER_…)")
    p.add_argument("--nats-url", help="default NATS_URL, else a running `fleet up`")
    p.add_argument("--llm-url", help="OpenAI-compatible endpoint; default VLLM_URL or `fleet up`'s")
    p.add_argument("--model", help="model to request when a call names none")
    p.add_argument("--stream", help="the event stream the queue belongs to (FLEET_STREAM)")
    p.add_argument(
        "--ack-wait",
        type=float,
        help="seconds before a silent call is redelivered (FLEET_WORKER_ACK_WAIT, default 3)",
    )
    p.add_argument("--max-deliver", type=int, help="deliveries before a call is dead-lettered")
    p.add_argument("--drain", type=float, default=10.0, help="seconds to finish on SIGTERM")
    p.add_argument("--data-dir", help="where a local `fleet up` keeps its data (default .fleet)")
    p.set_defaults(fn=cmd_worker)


def _roles(raw: list[str] | None) -> list[str]:
    from aggregates import Role

    every = [r.value for r in Role]
    if not raw or any(r.lower() == "all" for r in raw):
        return every
    roles = [r.strip().upper() for part in raw for r in part.split(",") if r.strip()]
    unknown = sorted(set(roles) - set(every))
    if unknown:
        raise CliError(f"--role {', '.join(unknown)}: not one of {', '.join(every)}", code=2)
    return roles


async def _serve_metrics(
    stack: contextlib.AsyncExitStack,
    s: Settings,
    nats_url: str,
    names: QueueNames,
    roles: list[str],
) -> str:
    """With ``FLEET_METRICS_PORT``: /metrics with the served roles' pending calls; where."""
    if not s.metrics_port:
        return ""
    from fleet.metrics import FleetMetrics, agent_queues

    metrics = FleetMetrics()
    stack.push_async_callback(metrics.close)
    await metrics.track_queues(nats_url, agent_queues(names, roles))
    port = metrics.serve(s.metrics_host, s.metrics_port)
    return f"; metrics http://{s.metrics_host}:{port}/metrics"


async def cmd_worker(args: argparse.Namespace) -> None:
    from fleet import logs
    from fleet.agents import start_workers
    from fleet.bootstrap import read_run_file
    from lifecycle.collector import tune_collector

    overrides: dict[str, Any] = {
        "worker_concurrency": args.concurrency,
        "worker_ack_wait": args.ack_wait,
        "worker_max_deliver": args.max_deliver,
        "stream": args.stream,
        "nats_url": args.nats_url,
        "vllm_url": args.llm_url,
    }
    s = settings(args, **overrides)
    import logging

    logs.configure(logging.getLogger().level, s.log_format)
    run = read_run_file(data_dir(args)) or {}
    nats_url = s.nats_url or run.get("nats_url")
    llm_url = s.vllm_url or run.get("llm_url")
    if not nats_url or not llm_url:
        raise CliError(
            "no NATS or model endpoint: set NATS_URL and VLLM_URL (or --nats-url, --llm-url), "
            f"or start `fleet up` with --data-dir {data_dir(args)}",
            code=2,
        )
    if not args.stream and not os.environ.get("FLEET_STREAM") and run.get("stream"):
        s = settings(args, **{**overrides, "stream": str(run["stream"])})
    model = args.model or (s.vllm_model if s.vllm_url else run.get("model") or s.vllm_model)
    roles = _roles(args.role)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        workers = await start_workers(
            stack,
            s,
            nats_url=str(nats_url),
            llm_url=str(llm_url),
            model=model,
            roles=roles,
            drain_s=args.drain,
        )
        names = workers[0].names
        where = await _serve_metrics(stack, s, str(nats_url), names, roles)
        tune_collector()  # as ``fleet up`` does: a long-running process, now started
        console.print(
            f"worker serving {', '.join(roles)} x{s.worker_concurrency} "
            f"from {names.work_stream} on {nats_url}; model endpoint {llm_url}{where}"
        )
        await stop.wait()
    console.print("worker stopped.")
