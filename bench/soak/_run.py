"""One soak run, start to finish: start the system, load it while killing its processes, let it
drain with no more kills, read everything back, judge, stop everything."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.soak._chaos import Chaos, Fault
from bench.soak._load import LoadConfig, Submission, submit_all
from bench.soak._recovery import RecoveryRow, recovery_rows
from bench.soak._stream import EventLog, stored_answers
from bench.soak._system import STREAM, System, SystemConfig
from bench.soak._verdicts import (
    Verdict,
    acknowledged_were_requested,
    all_terminal,
    every_submission_acknowledged,
    everyone_came_back,
    failures,
    graph_count,
    no_false_failures,
    nothing_after_terminal,
    one_answer_each,
    verify_clean,
)
from fleet.client import FleetClient
from fleet_testing.processes import FLEET

log = logging.getLogger("soak")

KINDS = frozenset({"nats", "valkey", "api", "projectors", "dispatcher", "worker"})


@dataclass(frozen=True)
class SoakConfig:
    deliberations: int = 300
    rate_per_s: float = 2.0
    kill_every_s: tuple[float, float] = (3.0, 6.0)
    kinds: frozenset[str] = KINDS
    """Which kinds of process are killed."""
    cluster: bool = False
    """Three routed nats-servers, every stream R3, a node killed in turn with the others."""
    node_down_s: float = 10.0
    dispatchers: int = 2
    workers: int = 2
    agents: int = 3
    rounds: tuple[int, ...] = (1, 1, 1, 2)
    model_delay_s: float = 0.5
    model_spread: float = 0.5
    deliberation_timeout_s: int = 90
    agent_call_timeout_s: float = 45.0
    fleet_env: dict[str, str] = field(default_factory=dict)
    """More ``FLEET_*`` settings for every Fleet process (``FLEET_WORKER_ACK_WAIT``, …)."""
    ready_timeout_s: float = 120.0
    stall_s: float = 2.0
    """A deliberation that writes nothing for longer than this is held up (the load generator
    answers within 1.5 × ``model_delay_s``)."""
    settle_timeout_s: float = 120.0
    """After the drain: how long the projections get to reach the stream's head."""
    seed: int | None = None
    data_dir: Path | None = None
    keep: bool = False
    """Keep the data directory (logs, stores) even when every invariant holds."""

    def env(self) -> dict[str, str]:
        return {
            "FLEET_AGENT_CALL_TIMEOUT": str(self.agent_call_timeout_s),
            "DELIBERATION_TIMEOUT": str(self.deliberation_timeout_s),
            **self.fleet_env,
        }


@dataclass
class SoakResult:
    verdicts: list[Verdict]
    recovery: list[RecoveryRow]
    faults: list[Fault]
    submissions: list[Submission]
    data_dir: Path
    kept: bool
    timings: dict[str, float]
    failures: list[tuple[str, str, int]] = field(default_factory=list)
    """What the events say failed, and why (``_verdicts.failures``)."""

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verdicts": [vars(v) for v in self.verdicts],
            "recovery": [vars(r) for r in self.recovery],
            "faults": [vars(f) for f in self.faults],
            "timings": self.timings,
            "failures": self.failures,
            "data_dir": str(self.data_dir),
        }


async def run_soak(config: SoakConfig) -> SoakResult:
    """Run one soak; every process it started is stopped when it returns or is cancelled."""
    root = config.data_dir or Path(tempfile.mkdtemp(prefix="fleet-soak-"))
    rng = random.Random(config.seed)
    system = System(
        SystemConfig(
            root=root,
            cluster=config.cluster,
            dispatchers=config.dispatchers,
            workers=config.workers,
            model_delay_s=config.model_delay_s,
            model_spread=config.model_spread,
            node_down_s=config.node_down_s,
            env=config.env(),
        )
    )
    chaos = Chaos(
        system,
        every_s=config.kill_every_s,
        rng=rng,
        ready_timeout_s=config.ready_timeout_s,
        kinds=config.kinds,
    )
    timings: dict[str, float] = {}
    events: EventLog | None = None
    background: list[asyncio.Task[None]] = []
    result: SoakResult | None = None
    try:
        t0 = time.monotonic()
        await system.start(config.ready_timeout_s)
        timings["start"] = time.monotonic() - t0
        log.info("started in %.1f s under %s", timings["start"], root)

        load_done, drained = asyncio.Event(), asyncio.Event()
        background = [
            asyncio.create_task(chaos.kill_until(load_done)),
            asyncio.create_task(chaos.supervise_until(drained)),
        ]
        t0 = time.monotonic()
        load = LoadConfig(
            deliberations=config.deliberations,
            rate_per_s=config.rate_per_s,
            agents=config.agents,
            rounds=config.rounds,
            timeout_s=config.deliberation_timeout_s,
        )
        subs = await submit_all(system.api_address, load)
        load_done.set()
        timings["load"] = time.monotonic() - t0
        log.info("%d submitted in %.1f s; no more kills", len(subs), timings["load"])
        await chaos.settle()

        t0 = time.monotonic()
        replicas = 3 if config.cluster else 1
        events = await asyncio.to_thread(EventLog, system.nats_url, STREAM, replicas)
        await _drain(events, subs, config.deliberation_timeout_s + 60.0)
        timings["drain"] = time.monotonic() - t0
        drained.set()
        await asyncio.gather(*background)
        await chaos.settle()

        t0 = time.monotonic()
        result = await _judge(system, config, events, subs, chaos.faults, root, timings)
        timings["checks"] = time.monotonic() - t0
        return result
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if events is not None:
            events.close()  # before the servers go, or it logs their going
        await system.stop()
        if result is not None and result.ok and not config.keep:
            shutil.rmtree(root, ignore_errors=True)
            result.kept = False


async def _drain(events: EventLog, subs: list[Submission], timeout_s: float) -> None:
    """Wait, with no more faults, until every submission is in the stream and every
    deliberation has ended (or ``timeout_s`` passes: the verdicts then say what is open)."""
    wanted = {s.task_id for s in subs if s.acked_at is not None}
    deadline = time.monotonic() + timeout_s
    said = 0.0
    while True:
        await asyncio.to_thread(events.extend)
        seen = {h.task_id for h in events.histories.values()}
        still = len(events.open_ids())
        if wanted <= seen and not still:
            return
        if time.monotonic() > deadline:
            log.warning("drain: %d deliberations still open after %.0f s", still, timeout_s)
            return
        if time.monotonic() - said > 10:
            log.info("drain: %d deliberations open", still)
            said = time.monotonic()
        await asyncio.sleep(1.0)


async def _projected(address: str, head: int, timeout_s: float) -> str:
    """Wait until every projection of the node at ``address`` has applied ``head``; "" when it
    has, else why not."""
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    deadline = time.monotonic() + timeout_s
    why = ""
    async with FleetClient(address, timeout=10.0) as client:
        while time.monotonic() < deadline:
            try:
                status = await client.stub.GetNodeStatus(pb.GetNodeStatusRequest(), timeout=10.0)
                behind = [
                    f"{p.name} at {p.position}"
                    for p in status.projections
                    if p.position < head or p.lag_events > 0
                ]
                if not behind:
                    return ""
                why = f"head {head}; " + ", ".join(behind)
            except Exception as e:  # a node still restarting: ask again
                why = repr(e)
            await asyncio.sleep(0.5)
    return f"projections not caught up after {timeout_s:.0f} s: {why}"


async def _verify(address: str) -> tuple[int | None, dict[str, Any] | None, str]:
    """``fleet verify --json`` through the API, as an operator would run it."""
    proc = await asyncio.create_subprocess_exec(
        FLEET, "verify", "--address", address, "--json", "--timeout", "300",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    try:
        report: dict[str, Any] = json.loads(out)
    except ValueError:
        return proc.returncode, None, err.decode(errors="replace")[-500:]
    return proc.returncode, report, err.decode(errors="replace")[-500:]


async def _graph_count(address: str) -> tuple[int | None, str]:
    async with FleetClient(address, timeout=30.0) as client:
        try:
            _, rows, _ = await client.query("MATCH (d:Deliberation) RETURN count(d) AS n")
        except Exception as e:
            return None, repr(e)
    return int(rows[0]["n"]), ""


async def _judge(
    system: System,
    config: SoakConfig,
    events: EventLog,
    subs: list[Submission],
    faults: list[Fault],
    root: Path,
    timings: dict[str, float],
) -> SoakResult:
    head = await asyncio.to_thread(events.extend)
    behind = await _projected(system.api_address, head, config.settle_timeout_s)
    count, count_error = await _graph_count(system.api_address)
    rc, report, verify_error = await _verify(system.api_address)
    stored = await stored_answers(system.nats_urls, STREAM)
    verdicts = [
        every_submission_acknowledged(subs),
        acknowledged_were_requested(subs, events.histories),
        one_answer_each(events.histories),
        no_false_failures(events.histories, stored),
        nothing_after_terminal(events.histories),
        all_terminal(events.histories),
        verify_clean(rc, report, behind or verify_error),
        graph_count(count, subs, events.histories, behind or count_error),
        everyone_came_back(faults),
    ]
    rows = recovery_rows(faults, events.histories, subs, config.stall_s)
    return SoakResult(
        verdicts,
        rows,
        faults,
        subs,
        root,
        kept=True,
        timings=timings,
        failures=failures(events.histories),
    )
