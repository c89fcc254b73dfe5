"""Fleet's main job on the embedded default, end to end, for a newcomer (``make run``).

Starts the whole embedded system, submits one deliberation through the gRPC API with acceptance
tests, waits for it, and shows the proposals with their checks (each ran against the tests in
the sandbox: the table's "run" column), the status and the winner; then a Cypher query over the
history graph and the deliberation's timeline replayed from JetStream. Every stage is timed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fleet import render
from fleet.bootstrap import FleetNode
from fleet.config import Settings
from fleet.embedded._process import free_port

TASK = "Write a Python function that returns the n-th Fibonacci number"
ACCEPTANCE_TESTS = """\
import solution


def _fib():
    named = [f for n, f in vars(solution).items() if callable(f) and "fib" in n.lower()]
    assert named, "no function with 'fib' in its name"
    return named[0]


def test_start():
    assert _fib()(0) == 0 and _fib()(1) == 1


def test_ten():
    assert _fib()(10) == 55
"""
"""The demo's acceptance tests: every proposal runs against them in the sandbox, and the table
shows the run. They look the function up by name, since the task does not name it."""

HISTORY_QUERY = """\
MATCH (d:Deliberation {task_id: $task_id})-[:HAS_PROPOSAL]->(p:Proposal)<-[:PROPOSED]-(a:Agent)
OPTIONAL MATCH (d)-[w:WON_BY]->(p)
RETURN a.id AS agent, p.model AS model, p.tokens AS tokens, p.latency_ms AS latency_ms,
       p.score AS score, w IS NOT NULL AS winner
ORDER BY score DESC"""


async def run_demo(settings: Settings, console: Console) -> None:
    import os

    if "FLEET_GRPC_PORT" not in os.environ:
        # A private port: the demo must not collide with a `fleet up` already on 50055.
        settings = replace(settings, grpc_port=free_port())
    timings: dict[str, float] = {}

    def stage(name: str, dt: float) -> None:
        timings[f"start {name}"] = dt
        console.print(f"  [green]✓[/] {name} [dim]{dt:.1f} s[/]")

    console.rule("[bold]Fleet demo[/]: one deliberation on the embedded stack")
    console.print(f"data directory: {settings.data_dir}")
    async with FleetNode(settings, on_stage=stage) as node:
        from fleet.cli.commands.deliberations import wait_with_progress
        from fleet.cli.commands.replay import print_replay
        from fleet.client import ClientSecurity, FleetClient

        console.print(render.endpoints(node.endpoints, node.stage_seconds))
        if node.endpoints.web:
            console.print(f"web console: [bold]{node.endpoints.web}[/] (open it to watch)")
        task_id = "demo-" + datetime.now(tz=UTC).strftime("%Y%m%dT%H%M%S")
        # The demo's node is this process's: it knows the token (TLS is for remote clients).
        security = ClientSecurity(token=settings.api_token)
        async with FleetClient(node.endpoints.grpc, security=security) as client:
            t0 = time.perf_counter()
            resp = await client.deliberate(
                TASK,
                role="DEV",
                num_agents=3,
                rounds=1,
                task_id=task_id,
                acceptance_tests=ACCEPTANCE_TESTS,
            )
            timings["Deliberate RPC (accepted)"] = time.perf_counter() - t0
            console.print(
                f"\n[bold]Deliberate[/] → task [bold]{resp.task_id}[/] accepted "
                f"in {timings['Deliberate RPC (accepted)'] * 1000:.0f} ms: {TASK!r}"
            )
            t1 = time.perf_counter()
            final = await wait_with_progress(
                client, task_id, settings.deliberation_timeout + 60, False
            )
            timings["deliberation (3 agents, 1 round)"] = time.perf_counter() - t1
            console.rule("Result (GetDeliberationResult)")
            render.result(console, final)

            t2 = time.perf_counter()
            await node.wait_projected()
            timings["projections caught up"] = time.perf_counter() - t2
            console.rule("Cypher over the history graph (QueryHistory)")
            # As text, not markup: rich would swallow ``[w:WON_BY]`` and print a broken query.
            console.print(Text(f"{HISTORY_QUERY}\nparams: task_id={task_id!r}", style="dim"))
            t3 = time.perf_counter()
            columns, rows, _ = await client.query(HISTORY_QUERY, {"task_id": task_id})
            timings["Cypher query"] = time.perf_counter() - t3
            render.rows(console, columns, rows)
            totals = await client.query(
                "MATCH (d:Deliberation) RETURN d.status AS status, count(*) AS deliberations "
                "ORDER BY status"
            )
            render.rows(console, totals[0], totals[1], title="All deliberations in this data dir")

        console.rule("Replay from JetStream (fleet replay)")
        from application.replay import replay

        t4 = time.perf_counter()
        h = await asyncio.to_thread(
            replay, node.endpoints.nats_url, node.endpoints.stream, task_id, 0
        )
        timings["replay from JetStream"] = time.perf_counter() - t4
        print_replay(h, task_id, as_json=False)

        t = Table(title="Where the time went")
        t.add_column("stage")
        t.add_column("seconds", justify="right")
        for name, dt in timings.items():
            t.add_row(name, f"{dt:.2f}")
        console.print(t)
