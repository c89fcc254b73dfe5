"""``FLEET_GRAPH=neo4j fleet up``: Fleet starts a private Neo4j and projects into it.

A real ``fleet up`` child process (the load generator as its model, agents in process, no cache)
with no Neo4j URI: it starts Neo4j Community from the jars ``make neo4j`` resolved, names its Bolt
URI in ``run.json``, and projects deliberations there. A plain ``neo4j`` driver, logging in with
the password given in ``NEO4J_PASSWORD``, finds a deliberation's node and sees a real Neo4j
kernel; ``fleet query`` answers from it; ``fleet verify`` is clean, then exits 1 once a node is
changed behind Fleet's back through that driver, and is clean again after ``fleet projections
rebuild graph``. The password appears in no log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from neo4j import GraphDatabase

from fleet.client import FleetClient
from fleet.embedded.neo4j import generate_password
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from fleet_testing.processes import REPO
from tests.e2e._processes import FleetProcess
from tests.fixtures.neo4j import require_neo4j
from tests.support.waiting import eventually

# Neo4j's start and its first transactions (a cold JVM plans every statement once) take minutes
# on a 2-core machine that other work loads; on a quiet one, well under one.
pytestmark = pytest.mark.timeout(600)


def _fleet(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "fleet.cli", *args], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip


def _rows(driver: Any, cypher: str, **params: Any) -> list[dict[str, Any]]:
    with driver.session() as session:
        return [r.data() for r in session.run(cypher, params)]


async def test_fleet_up_with_neo4j_serves_a_deliberation_a_plain_driver_finds(
    tmp_path: Path, nats_url: str
) -> None:
    require_neo4j()
    password = generate_password()
    data_dir = tmp_path / "node"
    async with LoadGenServer("instant") as endpoint:
        env = {
            "FLEET_GRAPH": "neo4j",
            "NEO4J_PASSWORD": password,
            "NATS_URL": nats_url,
            "FLEET_STREAM": f"T_{uuid.uuid4().hex[:16].upper()}",
            "FLEET_VLLM_URL": endpoint.url,
            "FLEET_VLLM_MODEL": "loadgen",
            "FLEET_AGENT_RUNTIME": "local",
            "FLEET_CACHE": "off",
            "FLEET_PLAN_CONSUMER": "off",
            "FLEET_OUTBOX": "off",
        }
        for name in ("FLEET_NEO4J_URI", "NEO4J_URI", "FLEET_METRICS_PORT"):
            env[name] = ""
        node = FleetProcess(data_dir, "api,dispatcher,projectors,agents", env)
        try:
            run = node.wait_ready(timeout=300)
            uri, address = str(run["graph"]), str(run["grpc"])
            assert uri.startswith("bolt://127.0.0.1:"), run
            async with FleetClient(address) as client:
                await client.deliberate("write fib", task_id="neo-1")
                done = await client.wait("neo-1", timeout=90)
            assert done.status == pb.DELIBERATION_STATUS_COMPLETED

            driver = GraphDatabase.driver(uri, auth=("neo4j", password))
            try:
                components = _rows(driver, "CALL dbms.components()")
                assert [(c["name"], c["edition"], c["versions"]) for c in components] == [
                    ("Neo4j Kernel", "community", ["5.26.0"])
                ]
                found = "MATCH (d:Deliberation {task_id: $task}) RETURN d.status AS status"
                await eventually(
                    lambda: _rows(driver, found, task="neo-1") == [{"status": "COMPLETED"}],
                    timeout=180, interval=0.5, what="the deliberation never reached the graph",
                )  # fmt: skip
                winner = _rows(
                    driver,
                    "MATCH (d:Deliberation {task_id: $task})-[:WON_BY]->(p:Proposal)"
                    "<-[:PROPOSED]-(a:Agent) RETURN a.id AS agent",
                    task="neo-1",
                )
                assert winner == [{"agent": done.winner_id}]

                query = _fleet(
                    "query", "MATCH (d:Deliberation) RETURN d.task_id AS task, d.status AS s",
                    "--json", "--address", address,
                )  # fmt: skip
                assert query.returncode == 0, query.stderr
                assert json.loads(query.stdout)["rows"] == [{"task": "neo-1", "s": "COMPLETED"}]

                clean = _fleet("verify", "--address", address)
                assert clean.returncode == 0, clean.stdout + clean.stderr
                _rows(
                    driver,
                    "MATCH (d:Deliberation {task_id: $task}) SET d.status = 'FAILED'",
                    task="neo-1",
                )
                tampered = _fleet("verify", "--address", address)
                assert tampered.returncode == 1, tampered.stdout + tampered.stderr
                assert "status" in tampered.stdout and "FAILED" in tampered.stdout

                rebuilt = _fleet("projections", "rebuild", "graph", "--address", address)
                assert rebuilt.returncode == 0, rebuilt.stderr
                again = _fleet("verify", "--address", address)
                assert again.returncode == 0, again.stdout + again.stderr
                assert _rows(driver, found, task="neo-1") == [{"status": "COMPLETED"}]
            finally:
                driver.close()
        finally:
            node.stop()
    logs = [data_dir / "fleet.log", data_dir / "neo4j" / "neo4j.log"]
    logs += sorted((data_dir / "neo4j" / "logs").glob("*.log"))
    for log in logs:
        assert password not in log.read_text(errors="replace"), f"the password is in {log}"
