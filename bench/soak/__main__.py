"""``python -m bench.soak``: the command line, and the tables it prints."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bench.soak._recovery import p50_max
from bench.soak._run import KINDS, SoakConfig, SoakResult, run_soak

console = Console()
if not console.is_terminal:
    console.width = 120  # a log file: room for the tables rather than 80 columns


def _range(raw: str) -> tuple[float, float]:
    low, _, high = raw.partition("-")
    return float(low), float(high or low)


def parse(argv: list[str] | None = None) -> tuple[SoakConfig, Path | None]:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    p.add_argument("--deliberations", type=int, default=300)
    p.add_argument("--rate", type=float, default=2.0, help="submissions per second")
    p.add_argument("--kill-every", type=_range, default=(3.0, 6.0), help="seconds, e.g. 3-6")
    p.add_argument(
        "--kill", default=",".join(sorted(KINDS)), help="kinds of process to kill (comma-separated)"
    )
    p.add_argument("--cluster", action="store_true", help="three nats-servers, streams R3")
    p.add_argument("--node-down", type=float, default=10.0, help="cluster: seconds a node is down")
    p.add_argument("--dispatchers", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", default="1,1,1,2", help="rounds per deliberation, cycled")
    p.add_argument("--delay", type=float, default=0.5, help="model latency, seconds (mean)")
    p.add_argument("--timeout", type=int, default=90, help="each deliberation's deadline, s")
    p.add_argument("--call-timeout", type=float, default=45.0, help="FLEET_AGENT_CALL_TIMEOUT")
    p.add_argument("--ack-wait", type=float, help="FLEET_WORKER_ACK_WAIT (default Fleet's)")
    p.add_argument("--lease", type=float, help="FLEET_WORK_LEASE (default Fleet's)")
    p.add_argument("--seed", type=int)
    p.add_argument("--data-dir", type=Path, help="default: a new temporary directory")
    p.add_argument("--keep", action="store_true", help="keep logs and stores even when clean")
    p.add_argument("--json", type=Path, help="also write the result as JSON here")
    a = p.parse_args(argv)
    kinds = frozenset(k.strip() for k in a.kill.split(",") if k.strip())
    if kinds - KINDS:
        p.error(f"--kill: {sorted(kinds - KINDS)} not among {sorted(KINDS)}")
    fleet_env = {}
    if a.ack_wait is not None:
        fleet_env["FLEET_WORKER_ACK_WAIT"] = str(a.ack_wait)
    if a.lease is not None:
        fleet_env["FLEET_WORK_LEASE"] = str(a.lease)
    config = SoakConfig(
        deliberations=a.deliberations,
        rate_per_s=a.rate,
        kill_every_s=a.kill_every,
        kinds=kinds,
        cluster=a.cluster,
        node_down_s=a.node_down,
        dispatchers=a.dispatchers,
        workers=a.workers,
        rounds=tuple(int(r) for r in a.rounds.split(",")),
        model_delay_s=a.delay,
        deliberation_timeout_s=a.timeout,
        agent_call_timeout_s=a.call_timeout,
        fleet_env=fleet_env,
        seed=a.seed,
        data_dir=a.data_dir,
        keep=a.keep,
    )
    return config, a.json


def print_result(result: SoakResult, out: Console = console) -> None:
    t = Table(title="What was killed, and how long recovery took (p50 / max)")
    for col in ("process", "SIGKILLs", "exited itself", "back up", "held up", "recovery"):
        t.add_column(col)
    for r in result.recovery:
        t.add_row(
            r.kind,
            str(r.kills),
            str(r.exits),
            p50_max(r.restart_s)
            + (f" ({r.failed_starts} failed starts)" if r.failed_starts else "")
            + (f" ({r.not_back} never)" if r.not_back else ""),
            str(r.held_up) + (f" ({r.never} never moved again)" if r.never else ""),
            p50_max(r.recovery_s),
        )
    out.print(t)
    if result.failures:
        f = Table(title="What failed, and why (from the events; not a verdict)")
        for col in ("event", "reason", "count"):
            f.add_column(col)
        for what, why, n in result.failures:
            f.add_row(what, Text(why), str(n))
        out.print(f)
    v = Table(title="Invariants, from the stream")
    for col in ("invariant", "verdict", "what was seen"):
        v.add_column(col)
    for verdict in result.verdicts:
        mark = Text("holds", style="green") if verdict.ok else Text("VIOLATED", style="bold red")
        v.add_row(verdict.name, mark, Text(verdict.summary))
    out.print(v)
    for verdict in result.verdicts:
        if verdict.violations:
            out.print(Text(f"{verdict.name}: {len(verdict.violations)} violations", style="bold"))
            for line in verdict.violations[:12]:
                out.print(Text(f"  {line}"))
            if len(verdict.violations) > 12:
                out.print(f"  … and {len(verdict.violations) - 12} more")
    phases = ", ".join(f"{k} {v:.0f} s" for k, v in result.timings.items())
    out.print(f"phases: {phases}")
    if result.kept:
        out.print(f"logs and stores kept in {result.data_dir}")


async def _main(config: SoakConfig, json_path: Path | None) -> int:
    task = asyncio.current_task()
    assert task is not None
    stopping = False

    def stop() -> None:
        nonlocal stopping
        if not stopping:  # a second Ctrl-C must not cut the clean-up short
            stopping = True
            console.print("stopping every process…")
            task.cancel()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    try:
        result = await run_soak(config)
    except asyncio.CancelledError:
        console.print("interrupted: every process the soak started is stopped")
        return 130
    print_result(result)
    if json_path is not None:
        await asyncio.to_thread(json_path.write_text, json.dumps(result.to_json(), indent=2))
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return asyncio.run(_main(*parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
