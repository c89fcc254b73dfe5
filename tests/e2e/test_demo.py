"""``make run``'s command, ``fleet demo``, end to end, against the load generator (fast).

The demo runs as a user runs it: a child process of ``fleet demo`` on the whole embedded stack
(private nats-server and Valkey, LadybugDB, local Ray), except that ``VLLM_URL`` points at the
load generator instead of starting llama.cpp with Gemma. Its printed output must show the three
proposals, the status and the winner, the Cypher history query with its answer (so the query
the README promises really runs on LadybugDB), and the timeline replayed from JetStream. The
load generator's text says nothing about quality; only that every stage ran and printed.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from fleet.bootstrap import FleetNode
from fleet.config import Settings
from fleet.demo import HISTORY_QUERY
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import FLEET, REPO

pytestmark = pytest.mark.timeout(120)

AGENTS = ("agent-dev-001", "agent-dev-002", "agent-dev-003")


async def run_fleet_demo(data_dir: Path, llm_url: str) -> str:
    """``fleet demo`` in a child process (the loop keeps serving the endpoint meanwhile)."""
    env = {
        **os.environ,
        "VLLM_URL": llm_url,
        "VLLM_MODEL": "loadgen",
        "COLUMNS": "200",  # rich wraps at 80 columns when not on a terminal
        "PYTHONPATH": str(REPO),
    }
    # The demo's own private servers and port, and its API in a child, as on a fresh machine.
    for name in ("FLEET_GRPC_PORT", "FLEET_NATS_URL", "NATS_URL", "FLEET_VALKEY_URL"):
        env.pop(name, None)
    env.pop("FLEET_API_PROCESS", None)
    proc = await asyncio.create_subprocess_exec(
        FLEET, "demo", "--data-dir", str(data_dir),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=150)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    # Its stop is clean too: the API's process stops before the servers it uses.
    assert "Traceback" not in text and "error:" not in text, text[-4000:]
    return text


async def test_fleet_demo_prints_result_history_query_and_replayed_timeline(
    tmp_path: Path,
) -> None:
    async with LoadGenServer("instant") as endpoint:
        out = await run_fleet_demo(tmp_path / "demo", endpoint.url)
        calls = endpoint.counters.answered
    assert calls >= 3, "the demo's agents must call the endpoint VLLM_URL names"
    assert f"{endpoint.url} model loadgen" in out, "the LLM endpoint printed is VLLM_URL's"

    result = out.split("Result (GetDeliberationResult)", 1)[1].split("Cypher over the history")[0]
    head = re.search(r"task (demo-\S+)\s+status (\S+)\s+winner (\S+)", result)
    assert head is not None, result
    task_id, status, winner = head.groups()
    assert status == "COMPLETED" and winner in AGENTS
    for agent in AGENTS:  # a panel per proposal, with its content (the code, fences dropped)
        assert re.search(rf"{agent} \(rank [123], score \d\.\d\d\)", result), agent
        assert f"Plan ({agent})" in result, agent
    assert result.count("def solve_") == 3
    # The executed checks: each proposal ran against the demo's acceptance tests in the sandbox
    # (the load generator's code has no fib, so each fails them, and says so).
    assert result.count("acceptance 0/2 passed") == 3, result

    history = out.split("Cypher over the history graph (QueryHistory)", 1)[1]
    history = history.split("Replay from JetStream")[0]
    assert HISTORY_QUERY.splitlines()[0] in history and f"task_id={task_id!r}" in history
    answer_rows = [line for line in history.splitlines() if re.search(r"agent-dev-\d{3}", line)]
    assert len(answer_rows) == 3, history
    assert sum(" true " in row for row in answer_rows) == 1, "one winner in the graph"
    assert any(winner in row and " true " in row for row in answer_rows)

    replay = out.split("Replay from JetStream (fleet replay)", 1)[1]
    assert f"Replayed timeline of {task_id}" in replay
    for event in ("Requested", "Started", "ProposalReceived", "ProposalScored", "Completed"):
        assert event in replay, event
    assert replay.count("ProposalReceived") == 3
    assert re.search(rf"status\s+COMPLETED\s*, winner {winner}, 3 proposal\(s\)", replay)
    assert "Where the time went" in replay


async def test_with_vllm_url_no_llama_cpp_server_is_started(tmp_path: Path) -> None:
    async with LoadGenServer("instant") as endpoint:
        env = {"VLLM_URL": endpoint.url, "FLEET_DATA_DIR": str(tmp_path)}
        # The agents component is the one that starts llama.cpp when no URL is set.
        settings = Settings.from_env(env, components=frozenset({"agents"}), agent_runtime="local")
        async with FleetNode(settings) as node:
            servers = set(node.servers)
            llm_url, model = node.endpoints.llm_url, node.endpoints.model
    assert "llm" not in servers and "nats" in servers
    assert (llm_url, model) == (endpoint.url, "Qwen/Qwen3-0.6B")
    leftovers = await asyncio.to_thread(lambda: list(tmp_path.glob("llm*")))
    assert not leftovers, "nothing of llama.cpp's in the data directory"
