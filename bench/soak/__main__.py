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
from rich.text import Text

from bench.soak._report import print_result
from bench.soak._run import KINDS, SoakConfig, run_soak

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
    if a.deliberations < 1 or a.rate <= 0:
        p.error("--deliberations must be at least 1 and --rate above 0")
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
    except RuntimeError as e:  # the system did not start: the message names the logs
        console.print(Text(f"error: {e}"))
        return 2
    print_result(result, console)
    if json_path is not None:
        await asyncio.to_thread(json_path.write_text, json.dumps(result.to_json(), indent=2))
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return asyncio.run(_main(*parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
