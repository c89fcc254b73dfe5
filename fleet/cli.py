"""The ``fleet`` command: run the system and talk to it.

Every command prints for people by default and JSON with ``--json``. An error is one line on
stderr and a non-zero exit (2 for bad input, 1 for everything else).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.text import Text

from fleet import __version__, render
from fleet.config import ConfigError, Settings
from fleet.timeline import to_json

console = Console()
err = Console(stderr=True, soft_wrap=True)  # an error stays one line, however long


class CliError(Exception):
    """A user-facing failure: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- where is Fleet?


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir or os.environ.get("FLEET_DATA_DIR") or ".fleet")


def _api_address(args: argparse.Namespace) -> str:
    """--address, FLEET_ADDRESS, a running `fleet up` (its run.json), then the default port."""
    if args.address:
        return str(args.address)
    if os.environ.get("FLEET_ADDRESS"):
        return os.environ["FLEET_ADDRESS"]
    from fleet.bootstrap import read_run_file

    run = read_run_file(_data_dir(args))
    if run and run.get("grpc"):
        return str(run["grpc"])
    return f"127.0.0.1:{Settings.from_env().grpc_port}"


def _event_store(args: argparse.Namespace) -> tuple[str, str]:
    """The NATS URL and stream: the environment first, then a running `fleet up`."""
    s = Settings.from_env()
    if s.nats_url:
        return s.nats_url, s.stream
    from fleet.bootstrap import read_run_file

    run = read_run_file(_data_dir(args))
    if run and run.get("nats_url"):
        return str(run["nats_url"]), str(run.get("stream") or s.stream)
    raise CliError(
        "no event store to read: set NATS_URL (and FLEET_STREAM) or start `fleet up` "
        f"with --data-dir {_data_dir(args)}"
    )


# ---------------------------------------------------------------- commands


async def cmd_up(args: argparse.Namespace) -> None:
    from fleet.bootstrap import FleetNode

    settings = _settings(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with console.status("starting Fleet…") as status:
        node = FleetNode(
            settings, on_stage=lambda name, dt: status.update(f"{name} ready ({dt:.1f} s)…")
        )
        await node.start()
    try:
        _print_endpoints(node)
        console.print("[green]Fleet is up.[/] Ctrl-C stops it; the next start resumes.")
        await stop.wait()
    finally:
        with console.status("stopping Fleet…"):
            await node.stop()
    console.print("stopped.")


def _print_endpoints(node: Any) -> None:
    from rich.table import Table

    t = Table(title="Fleet endpoints")
    t.add_column("part")
    t.add_column("where")
    t.add_column("ready in")
    e = node.endpoints
    times = node.stage_seconds
    rows = [
        ("gRPC API", e.grpc, times.get("gRPC API")),
        ("event store", f"{e.nats_url} stream {e.stream}", times.get("event store (JetStream)")),
        ("cache", e.valkey_url or "off (replay on read)", None),
        ("graph", e.graph, times.get("projections")),
        ("LLM", f"{e.llm_url} model {e.model}", times.get("LLM endpoint")),
        ("Ray", e.ray, times.get("agents (Ray)")),
    ]
    for part, where, dt in rows:
        t.add_row(part, where, f"{dt:.1f} s" if dt is not None else "")
    console.print(t)


async def cmd_deliberate(args: argparse.Namespace) -> None:
    from fleet.client import FleetClient, status_name

    async with FleetClient(_api_address(args)) as client:
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
        final = await _wait_with_progress(client, resp.task_id, args.wait_timeout, args.json)
        _print_result(final, args.json)


async def _wait_with_progress(client: Any, task_id: str, timeout: float, quiet: bool) -> Any:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from fleet.client import status_name

    if quiet:
        return await client.wait(task_id, timeout=timeout)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:  # fmt: skip
        bar = progress.add_task(f"deliberation {task_id}", total=None, info="PENDING")

        def update(r: Any) -> None:
            done = len(r.results)
            progress.update(bar, info=f"{status_name(r.status)} · {done} proposal(s)")

        return await client.wait(task_id, timeout=timeout, on_update=update)


def _print_result(r: Any, as_json: bool) -> None:
    if as_json:
        from google.protobuf.json_format import MessageToDict

        print(json.dumps(MessageToDict(r, preserving_proto_field_name=True), indent=2))
    else:
        render.result(console, r)


async def cmd_result(args: argparse.Namespace) -> None:
    from fleet.client import FleetClient

    async with FleetClient(_api_address(args)) as client:
        _print_result(await client.result(args.task_id), args.json)


async def cmd_replay(args: argparse.Namespace) -> None:
    from fleet.replay import replay

    url, stream = _event_store(args)
    h = await asyncio.to_thread(replay, url, stream, args.task_id, args.to_version)
    print_replay(h, args.task_id, as_json=args.json)


def print_replay(h: Any, task_id: str, *, as_json: bool) -> None:
    d = h.deliberation
    if as_json:
        print(
            to_json(
                {
                    "task_id": task_id,
                    "deliberation_id": str(d.id),
                    "version": d.version,
                    "status": d.status.value,
                    "winner": d.winner,
                    "ranking": d.ranking,
                    "proposals": [
                        {
                            "agent_id": p.agent_id,
                            "round": p.round,
                            "content": p.content,
                            "score": p.score,
                        }
                        for p in d.final_proposals().values()
                    ],
                    "events": [
                        {"version": e.version, "type": e.type, "at": e.at, "data": e.data}
                        for e in h.entries
                    ],
                }
            )
        )
        return
    render.timeline(console, h.entries, title=f"Replayed timeline of {task_id} ({d.id})")
    console.print(
        f"folded state at version {d.version}: status ", render.status_text(d.status.value),
        f", winner {d.winner or '-'}, {len(d.final_proposals())} proposal(s)",
    )  # fmt: skip


async def cmd_query(args: argparse.Namespace) -> None:
    from fleet.client import FleetClient

    params: dict[str, Any] = {}
    for p in args.param or []:
        name, sep, raw = p.partition("=")
        if not sep or not name:
            raise CliError(f"--param {p!r}: expected NAME=VALUE", code=2)
        try:
            params[name] = json.loads(raw)
        except json.JSONDecodeError:
            params[name] = raw  # a bare word is a string
    async with FleetClient(_api_address(args)) as client:
        columns, data, truncated = await client.query(args.cypher, params, args.limit)
    if args.json:
        print(to_json({"columns": columns, "rows": data, "truncated": truncated}))
        return
    render.rows(console, columns, data)
    if truncated:
        console.print(f"[yellow]truncated at {len(data)} rows (--limit)[/]")


async def cmd_demo(args: argparse.Namespace) -> None:
    from fleet.demo import run_demo

    await run_demo(_settings(args, demo=True), console)


# ---------------------------------------------------------------- plumbing


def _settings(args: argparse.Namespace, *, demo: bool = False) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    elif demo:
        overrides["data_dir"] = Path(os.environ.get("FLEET_DATA_DIR") or ".fleet") / "demo"
    if getattr(args, "grpc_port", None):
        overrides["grpc_port"] = args.grpc_port
    if getattr(args, "grpc_host", None):
        overrides["grpc_host"] = args.grpc_host
    try:
        return Settings.from_env(**overrides)
    except ConfigError as e:
        raise CliError(str(e), code=2) from e


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fleet", description="Fleet: event-sourced multi-agent LLM deliberation."
    )
    p.add_argument("--version", action="version", version=f"fleet {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    def client_cmd(name: str, fn: Callable[..., Coroutine[Any, Any, None]], help: str) -> Any:
        c = sub.add_parser(name, help=help)
        c.add_argument(
            "--address",
            help="gRPC address (default: FLEET_ADDRESS, a running `fleet up`, 127.0.0.1:50055)",
        )
        c.add_argument("--data-dir", help="where `fleet up` keeps its data (default .fleet)")
        c.add_argument("--json", action="store_true", help="machine-readable output")
        c.set_defaults(fn=fn)
        return c

    up = sub.add_parser(
        "up", help="run the whole system (embedded parts for anything not configured)"
    )
    up.add_argument("--data-dir")
    up.add_argument("--grpc-port", type=int)
    up.add_argument("--grpc-host")
    up.set_defaults(fn=cmd_up)

    demo = sub.add_parser(
        "demo", help="start the embedded system, run one deliberation, show it all"
    )
    demo.add_argument("--data-dir")
    demo.add_argument("--grpc-port", type=int)
    demo.set_defaults(fn=cmd_demo)

    d = client_cmd("deliberate", cmd_deliberate, "submit a deliberation")
    d.add_argument("task", help="the task text")
    d.add_argument("--role", default="DEV", help="DEV, QA, ARCHITECT, DEVOPS or DATA")
    d.add_argument("--agents", type=int, default=3, help="agents on the council (1..16)")
    d.add_argument("--rounds", type=int, default=1, help="rounds (1..5)")
    d.add_argument("--task-id", help="your id for it (idempotent); generated when absent")
    d.add_argument(
        "--timeout", type=int, help="seconds until TIMEOUT (default DELIBERATION_TIMEOUT)"
    )
    d.add_argument("--wait", action="store_true", help="wait for the result, showing progress")
    d.add_argument("--wait-timeout", type=float, default=900.0)

    r = client_cmd("result", cmd_result, "status and results of a deliberation")
    r.add_argument("task_id")

    rp = sub.add_parser(
        "replay", help="read a deliberation's events back from JetStream and fold them"
    )
    rp.add_argument("task_id")
    rp.add_argument("--to-version", type=int, default=0, help="fold only up to this version")
    rp.add_argument("--data-dir")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(fn=cmd_replay)

    q = client_cmd("query", cmd_query, "read-only Cypher over the deliberation history")
    q.add_argument("cypher")
    q.add_argument("--param", action="append", help="NAME=VALUE (VALUE as JSON, or a bare string)")
    q.add_argument("--limit", type=int, default=0, help="row limit (default 1000)")
    return p


def _error(message: str) -> None:
    err.print(Text.assemble(("error: ", "red"), " ".join(message.split())))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        asyncio.run(args.fn(args))
        return 0
    except CliError as e:
        _error(str(e))
        return e.code
    except grpc.aio.AioRpcError as e:
        code = e.code()
        _error(f"{code.name}: {e.details()}")
        return 2 if code == grpc.StatusCode.INVALID_ARGUMENT else 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        from eventsourcing.persistence import PersistenceError

        if isinstance(e, PersistenceError | ConfigError | KeyError | LookupError):
            _error(str(e))
            return 1
        raise


if __name__ == "__main__":
    raise SystemExit(main())
