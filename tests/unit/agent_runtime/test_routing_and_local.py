"""Routing of agents to actors, and the in-process runtime against the load generator."""

from __future__ import annotations

import pytest

from agent_runtime.api import AgentTurn, AgentTurnError, AssessmentInput, Candidate, Sampling
from agent_runtime.member.caller import EndpointConfig, LocalAgentRuntime
from agent_runtime.ray_backend.runtime import pool_index
from tests.fixtures.llm import LoadGenFactory


def test_pool_index_is_stable_and_spreads_numbered_agents() -> None:
    assert [pool_index(f"agent-dev-{i}", 3) for i in range(6)] == [0, 1, 2, 0, 1, 2]
    assert pool_index("alice", 4) == pool_index("alice", 4)  # CRC-32, not the salted hash()
    assert 0 <= pool_index("alice", 4) < 4
    with pytest.raises(ValueError, match="pool_size"):
        pool_index("a", 0)


async def test_local_runtime_runs_turns_and_assesses(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("instant")
    runtime = LocalAgentRuntime(EndpointConfig(lg.url, "m"), ("DEV",))
    try:
        turn = AgentTurn("d", "agent-dev-1", "dev", 0, "task", sampling=Sampling(seed=3))
        result = await runtime.run_turn(turn)
        assert result.agent_id == "agent-dev-1" and "```python" in result.content
        with pytest.raises(AgentTurnError, match="no council for role"):
            await runtime.run_turn(AgentTurn("d", "q", "QA", 0, "task"))
        [a] = await runtime.assess(
            AssessmentInput("d", "DEV", "task", "", (), (Candidate("x", result.content),))
        )
        assert a.score == 1.0  # the canned code compiles and lints clean
    finally:
        await runtime.close()
