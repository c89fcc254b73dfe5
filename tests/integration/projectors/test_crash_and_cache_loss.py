"""Crashes and lost caches: SIGKILLed projectors resume exactly, an emptied Valkey refills.

Real nats-server (JetStream), real LadybugDB, real redis/valkey-server.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from uuid import uuid4

import pytest
import valkey

from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation
from application.app import FleetApplication
from application.queries import DeliberationQueries, recorder_latest_version
from application.stores import ApplicationDeliberationStore
from fleet.embedded.valkey import ValkeyServer
from projectors import CacheProjection, ProjectorRunner, view_from_aggregate
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.graph.ladybug import LadybugGraph
from projectors.verify import verify
from tests.support.deliberations import requested
from tests.support.waiting import eventually_sync
from tests.unit.projectors import scenarios

ROOT = Path(__file__).resolve().parents[3]


def _deliberations(n: int) -> list[Deliberation]:
    """``n`` completed deliberations of 9 events each, built in memory."""
    out = []
    for _ in range(n):
        d = requested(
            f"crash-{uuid4().hex[:10]}", task="add two numbers", timeout_seconds=600,
            plan_id="plan-crash", story_id="s", requested_by="tests",
        )  # fmt: skip
        d.start()
        for k, a in enumerate(d.agents):
            d.receive_proposal(
                agent_id=AgentId(a),
                round=0,
                answer=AgentAnswer(content=f"v{k}", model="m", tokens=k, latency_ms=k),
            )
        for k, a in enumerate(d.agents):
            check = CheckOutcome(check_type="lint", passed=True, score=0.5, message="ok")
            d.score(agent_id=AgentId(a), score=0.1 * k, checks=[check])
        d.complete()
        out.append(d)
    return out


@pytest.mark.timeout(180)
def test_sigkilled_projectors_resume_and_match_the_replay(
    nats_env: dict[str, str], tmp_path: Path, valkey_server: ValkeyServer, valkey_prefix: str
) -> None:
    app = FleetApplication(nats_env)
    for _ in range(12):  # 1,080 deliberations, 9,720 events, plus one more batch below
        app.save(*_deliberations(90))
    app.save(*_deliberations(32))
    head = app.recorder.max_notification_id() or 0
    assert head >= 10_000
    graph_path = tmp_path / "graph" / "g.lbug"
    cmd = [
        sys.executable, "-m", "tests.integration.projectors._projector_child",
        nats_env["NATS_URL"], nats_env["NATS_STREAM"], str(graph_path), valkey_server.url,
        valkey_prefix,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(4)
    seen = []
    for _ in range(3):
        child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        kill_after = rng.uniform(0.3, 2.5)
        started = None
        last = "0 0"
        for line in child.stdout:  # wait until it applies, then kill it a random moment later
            last = line.strip()
            if started is None and max(map(int, last.split())) > 0:
                started = time.monotonic()
            if started is not None and time.monotonic() - started > kill_after:
                break
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        seen.append(last)
    final = subprocess.run([*cmd, "--until-head"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert final.returncode == 0, final.stderr[-2000:]
    assert all(min(map(int, s.split())) < head for s in seen), seen  # killed mid catch-up
    graph = LadybugGraph(graph_path)
    client = valkey.Valkey.from_url(valkey_server.url)
    try:
        board = ValkeyDeliberationBoard(client, key_prefix=valkey_prefix)
        report = verify(app, graph=graph, board=board)
        assert report.ok, report.differences[:5]
        assert report.deliberations == 1_112 and report.cache_misses == 0
        assert graph.query("MATCH (e:Event) RETURN count(e) AS n") == [{"n": head}]
        assert graph.position("graph") == board.position() == head
    finally:
        graph.close()
        client.close()  # type: ignore[no-untyped-call]
        app.close()


@pytest.mark.timeout(90)
async def test_an_emptied_valkey_keeps_reads_answering_and_refills(
    own_valkey_server: ValkeyServer, valkey_prefix: str
) -> None:
    app = scenarios.popo_app()
    client = valkey.Valkey.from_url(own_valkey_server.url, socket_timeout=1)
    board = ValkeyDeliberationBoard(client, key_prefix=valkey_prefix)
    down = (valkey.ConnectionError, valkey.TimeoutError)
    runner = ProjectorRunner(app, CacheProjection(board), retry_on=down, lease_ms=3000)
    queries = DeliberationQueries(
        ApplicationDeliberationStore(app), board, None,
        latest_version=recorder_latest_version(app.recorder),
    )  # fmt: skip
    runs = [scenarios.completed(app), scenarios.timed_out(app)]
    runner.start()
    try:
        runner.wait(runs[-1].position)
        own_valkey_server.kill()
        runs.append(scenarios.all_failed(app))  # lands while the cache is down
        for run in runs:  # reads keep answering, from replays
            task_id = str(app.repository.get(run.deliberation_id).task_id)
            view = await queries.result(task_id)
            assert view == view_from_aggregate(app.repository.get(run.deliberation_id))
        await asyncio.sleep(0.3)
        assert runner.running() and runner.error is None  # retrying, not dead
        own_valkey_server.start()  # back, and empty
        runs.append(scenarios.completed(app))
        head = app.recorder.max_notification_id() or 0
        await asyncio.to_thread(_wait_for_board, board, head, 30)
        report = verify(app, board=board)
        assert report.ok, report.differences
        assert report.cache_misses == 0  # refilled from sequence 1, not only the new ones
        for run in runs:
            task_id = str(app.repository.get(run.deliberation_id).task_id)
            assert (await queries.result(task_id)).position is not None  # served by the cache
    finally:
        runner.close()
        client.close()  # type: ignore[no-untyped-call]


def _wait_for_board(board: ValkeyDeliberationBoard, head: int, timeout: float) -> None:
    eventually_sync(
        lambda: board.position() >= head,
        timeout=timeout,
        interval=0.05,
        what=f"cache not refilled to {head}",
        ignoring=(valkey.ConnectionError,),
    )
