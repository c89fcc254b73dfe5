"""Sandbox benchmark: what running a candidate behind walls costs, and what scoring adds.

    .venv/bin/python -m bench.sandbox_bench [--runs 60] [--deliberations 20] [--no-node]

Three figures, all measured in one run on one machine:

* PER CANDIDATE: one DEV candidate (the ten-task corpus' ``median``, right) run in the bubblewrap
  sandbox against the acceptance tests and a peer's tests (``execution.run_candidate``: what
  scoring does for each candidate), p50/p99 over ``--runs``, warm (a child of the slot's fork
  server, the default) and cold (a bwrap per run); beside them, measured in the same run,
  interleaved: a bare ``python3 -I -S -c pass`` subprocess (the least any
  process-per-candidate design pays) and ``python3 -c pass`` behind each kind of walls.
* SCORING STEP: ``assess_candidates`` for a three-candidate DEV deliberation (right, wrong,
  right again) with acceptance tests and cross-execution, p50/p99.
* SHARE OF A DELIBERATION (unless ``--no-node``): a real node (nats-server, Valkey, LadybugDB,
  Ray; the load generator answering at once in ``scripted`` mode, so the deliberation is all
  Fleet's own work, the worst case for the share) runs ``--deliberations`` two-agent DEV
  deliberations with acceptance tests, once with ``FLEET_SANDBOX=bwrap`` and once with ``off``;
  the share is (p50 with − p50 without) / p50 with, from each result's ``duration_ms``. With a
  real model answering in seconds, the share is that difference over seconds instead.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.execution import run_candidate
from agent_runtime.checks.sandbox import BwrapSandbox, SandboxLimits, open_sandbox
from agent_runtime.checks.scoring import assess_candidates
from bench.selection.corpus.dev_core import TASKS


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def line(name: str, xs: list[float]) -> str:
    return f"{name:<44} p50 {pct(xs, 0.5) * 1000:7.1f} ms   p99 {pct(xs, 0.99) * 1000:7.1f} ms"


def per_candidate(box: BwrapSandbox, cold: BwrapSandbox, runs: int) -> None:
    [t] = [t for t in TASKS if t.name == "median"]
    suites = {"acceptance": t.acceptance, "peer": t.wrong_tests}
    python = "/usr/bin/python3"
    limits = SandboxLimits()
    times: dict[str, list[float]] = {
        "ceiling: bare `python3 -c pass` subprocess": [],
        "cold walls: bwrap + `python3 -c pass`": [],
        "cold: a candidate, a bwrap per run": [],
        "warm walls: fork server `python3 -c pass`": [],
        "warm: a candidate vs acceptance + peer tests": [],
    }
    bare, cold_walls, cold_cand, warm_walls, cand = times.values()
    for sandbox in (box, cold):  # warm the page cache and the servers
        for _ in range(3):
            run_candidate(sandbox, t.right, suites, limits)
    started = box.servers_started
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
        for sandbox, out in ((cold, cold_walls), (box, warm_walls)):
            t0 = time.perf_counter()
            r = sandbox.run({}, ["python3", "-I", "-S", "-c", "pass"], limits)
            out.append(time.perf_counter() - t0)
            assert r.exit_code == 0, r
        for sandbox, out in ((cold, cold_cand), (box, cand)):
            t0 = time.perf_counter()
            done = run_candidate(sandbox, t.right, suites, limits)
            out.append(time.perf_counter() - t0)
            assert done.reported and done.suites["acceptance"].failed == 0, done
    print(f"\nPER CANDIDATE ({runs} runs each, interleaved)")
    for name, xs in times.items():
        print(line(name, xs))
    b = statistics.median(bare)
    print(
        f"  → a candidate costs {statistics.median(cand) / b:.2f}× the bare subprocess warm "
        f"(target ≤ 1.5×), {statistics.median(cold_cand) / b:.2f}× cold; "
        f"bwrap starts for {2 * runs} warm runs: {box.servers_started - started}"
    )


def scoring_step(box: BwrapSandbox, reps: int) -> float:
    [t] = [t for t in TASKS if t.name == "median"]
    cands = (
        Candidate("dev-agent-1", t.answer(right=True)),
        Candidate("dev-agent-2", t.answer(right=False)),
        Candidate("dev-agent-3", t.answer(right=True)),
    )
    request = AssessmentInput("bench", "DEV", t.task, "", (), cands, acceptance_tests=t.acceptance)
    times: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter()
        got = assess_candidates(request, box)
        times.append(time.perf_counter() - t0)
        assert max(got, key=lambda a: a.score).agent_id != "dev-agent-2"
    print(f"\nSCORING STEP (3 DEV candidates, acceptance + cross-execution, {reps} reps)")
    print(line("assess_candidates", times))
    return statistics.median(times)


async def deliberations(n: int, sandbox: str) -> list[float]:
    from fleet.bootstrap import FleetNode
    from fleet.client import FleetClient
    from fleet.config import Settings
    from fleet.embedded._process import free_port
    from fleet.embedded.ray_local import connect_ray, disconnect_ray
    from fleet_testing.loadgen import LoadGenServer

    t = TASKS[1]
    script = {"You prefer the simplest": t.answer(right=True), "correctness": t.answer(right=False)}
    connect_ray(None)
    try:
        async with LoadGenServer("scripted", script=script) as endpoint:
            with tempfile.TemporaryDirectory() as data:
                settings = Settings.from_env()
                settings = replace(
                    settings,
                    data_dir=Path(data),
                    grpc_port=free_port(),
                    vllm_url=endpoint.url,
                    vllm_model="loadgen",
                    sandbox=sandbox,
                )
                async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
                    out: list[float] = []
                    for i in range(n + 2):  # the first two warm the actors
                        tid = f"bench-{sandbox}-{i}"
                        await c.deliberate(
                            t.task, num_agents=2, task_id=tid, acceptance_tests=t.acceptance
                        )
                        done = await c.wait(tid, timeout=120)
                        if i >= 2:
                            out.append(done.duration_ms / 1000)
                    return out
    finally:
        disconnect_ray()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--deliberations", type=int, default=20)
    p.add_argument("--no-node", action="store_true", help="skip the share of a deliberation")
    args = p.parse_args()
    box = open_sandbox("bwrap")
    assert isinstance(box, BwrapSandbox)
    cold = BwrapSandbox(box._bwrap, box._python, warm=False)
    per_candidate(box, cold, args.runs)
    scoring_step(box, max(10, args.runs // 3))
    if args.no_node:
        return
    with_box = asyncio.run(deliberations(args.deliberations, "bwrap"))
    without = asyncio.run(deliberations(args.deliberations, "off"))
    a, b = statistics.median(with_box), statistics.median(without)
    print(f"\nSHARE OF A DELIBERATION ({args.deliberations} two-agent DEV deliberations each;")
    print(" the load generator answers at once, so this is Fleet's own time, the worst case)")
    print(line("deliberation, FLEET_SANDBOX=bwrap", with_box))
    print(line("deliberation, FLEET_SANDBOX=off", without))
    print(f"  → executed checks add {(a - b) * 1000:.0f} ms, {(a - b) / a:.0%} of a deliberation")


if __name__ == "__main__":
    main()
