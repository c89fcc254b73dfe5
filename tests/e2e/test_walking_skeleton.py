"""One deliberation end to end on the real embedded stack, through the gRPC API.

Private nats-server, private redis/valkey-server, LadybugDB, local Ray and the real llama.cpp
server with Gemma 3 270M, all on free loopback ports. Checks each place the deliberation must land:
the JetStream stream (read raw), the Valkey cache, the Cypher graph, and a replay by `fleet replay`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from aggregates import deliberation_id
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.embedded.llm import llama_cpp_available
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from tests.e2e._stream import stored_events

pytestmark = [pytest.mark.llm, pytest.mark.timeout(600)]

TASK = "Write a Python function that returns the n-th Fibonacci number"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def node(
    tmp_path_factory: pytest.TempPathFactory, ray_session: None
) -> AsyncIterator[FleetNode]:
    if not llama_cpp_available():  # found, not imported: its libraries stay out of this process
        pytest.skip("the embedded LLM extra (xllamacpp) is not installed")
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("fleet-e2e"),
        grpc_port=free_port(),
        vllm_url=None,  # embedded: Fleet starts llama.cpp with Gemma itself
        deliberation_timeout=400,
        agent_call_timeout=400,  # three agents queue on one CPU-bound server: the deadline rules
        llm_max_tokens=128,
    )
    async with FleetNode(settings) as n:
        yield n


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deliberated(
    node: FleetNode,
) -> tuple[pb.DeliberateResponse, pb.GetDeliberationResultResponse, float]:
    async with FleetClient(node.endpoints.grpc) as client:
        t0 = time.perf_counter()
        accepted = await client.deliberate(
            TASK, role="DEV", num_agents=3, rounds=1, task_id="e2e-fib"
        )
        accept_s = time.perf_counter() - t0
        final = await client.wait("e2e-fib", timeout=400)
    await node.wait_projected()
    return accepted, final, accept_s


async def test_deliberate_returns_at_once_and_completes_with_three_results(
    deliberated: tuple[pb.DeliberateResponse, pb.GetDeliberationResultResponse, float],
) -> None:
    accepted, final, accept_s = deliberated
    assert accepted.task_id == "e2e-fib"
    assert accepted.status == pb.DELIBERATION_STATUS_PENDING
    assert accept_s < 2.0, "Deliberate must return before any agent answers"
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message
    assert len(final.results) == 3
    assert final.winner_id in {r.proposal.author_id for r in final.results}
    assert sorted(r.rank for r in final.results) == [1, 2, 3]
    assert all(r.proposal.content.strip() for r in final.results)


async def test_three_proposals_with_model_text_are_in_the_jetstream_stream(
    node: FleetNode, deliberated: object
) -> None:
    events = await stored_events(
        node.endpoints.nats_url, node.endpoints.stream, deliberation_id("e2e-fib")
    )
    proposals = [state for name, state in events if name == "ProposalReceived"]
    assert len(proposals) == 3
    assert {p["agent_id"] for p in proposals} == {"agent-dev-001", "agent-dev-002", "agent-dev-003"}
    assert all(p["content"].strip() and p["tokens"] > 0 for p in proposals)
    assert all(p["model"] for p in proposals)


async def test_the_cache_holds_the_completed_result(node: FleetNode, deliberated: object) -> None:
    board = node.queries._board if node.queries else None
    assert board is not None, "the embedded stack must run with its private Valkey cache"
    view = await asyncio.to_thread(board.get, deliberation_id("e2e-fib"))
    assert view is not None
    assert view.status.value == "COMPLETED"
    assert len(view.results) == 3
    assert view.winner is not None


async def test_the_graph_answers_cypher_with_three_proposals(
    node: FleetNode, deliberated: object
) -> None:
    async with FleetClient(node.endpoints.grpc) as client:
        _, rows, _ = await client.query(
            "MATCH (d:Deliberation {task_id: $t})-[:HAS_PROPOSAL]->(p:Proposal) "
            "RETURN count(p) AS proposals, d.status AS status",
            {"t": "e2e-fib"},
        )
        _, won, _ = await client.query(
            "MATCH (d:Deliberation {task_id: $t})-[:WON_BY]->(p:Proposal) RETURN p.agent_id AS a",
            {"t": "e2e-fib"},
        )
    assert rows == [{"proposals": 3, "status": "COMPLETED"}]
    assert len(won) == 1


async def test_fleet_replay_rebuilds_the_same_status_and_proposals(
    node: FleetNode,
    deliberated: tuple[pb.DeliberateResponse, pb.GetDeliberationResultResponse, float],
) -> None:
    _, final, _ = deliberated
    env = {
        **os.environ,
        "NATS_URL": node.endpoints.nats_url,
        "FLEET_STREAM": node.endpoints.stream,
    }
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "fleet.cli", "replay", "e2e-fib", "--json"],
        env=env, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    replayed = json.loads(out.stdout)
    assert replayed["status"] == "COMPLETED"
    assert replayed["winner"] == final.winner_id
    by_agent = {p["agent_id"]: p["content"] for p in replayed["proposals"]}
    assert by_agent == {r.proposal.author_id: r.proposal.content for r in final.results}
    types = [e["type"] for e in replayed["events"]]
    assert types[0] == "Requested" and types[-1] == "Completed"
    assert types.count("ProposalReceived") == 3
