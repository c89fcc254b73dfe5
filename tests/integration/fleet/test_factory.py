"""``fleet.agents.make_agent_runtime`` on the nats backend (the plug the dispatch tests use), the
settings that choose it, and the CLI flags that set them."""

from __future__ import annotations

import contextlib

import pytest

from agent_runtime.api import AgentTurn, AssessmentInput, Candidate, Sampling
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from fleet.agents import make_agent_runtime
from fleet.cli._main import build_parser
from fleet.config import ConfigError, Settings
from fleet_testing.loadgen import LoadGenServer
from tests.fixtures.nats import unique_stream_name

pytestmark = pytest.mark.timeout(60)


def test_the_backend_is_a_setting_and_a_flag() -> None:
    assert Settings.from_env({}).agent_backend == "ray"
    s = Settings.from_env({"FLEET_AGENT_BACKEND": "NATS", "FLEET_WORKER_ACK_WAIT": "2.5"})
    assert (s.agent_backend, s.worker_ack_wait, s.local_workers) == ("nats", 2.5, 1)
    with pytest.raises(ConfigError, match="FLEET_AGENT_BACKEND"):
        Settings.from_env({"FLEET_AGENT_BACKEND": "celery"})
    with pytest.raises(ConfigError, match="FLEET_WORKER_MAX_DELIVER"):
        Settings.from_env({"FLEET_WORKER_MAX_DELIVER": "0"})
    parser = build_parser()
    assert parser.parse_args(["up", "--agent-backend", "nats"]).agent_backend == "nats"
    args = parser.parse_args(["worker", "--role", "DEV", "--role", "QA", "--concurrency", "8"])
    assert (args.role, args.concurrency) == (["DEV", "QA"], 8)


async def test_make_agent_runtime_serves_every_role_through_in_process_workers(
    nats_url: str,
) -> None:
    settings = Settings.from_env(
        {"FLEET_AGENT_BACKEND": "nats", "FLEET_STREAM": unique_stream_name("NF")}
    )
    async with LoadGenServer("instant") as lg, contextlib.AsyncExitStack() as stack:
        runtime, where = await make_agent_runtime(
            stack, settings, llm_url=lg.url, model="loadgen", nats_url=nats_url
        )
        assert isinstance(runtime, NatsAgentRuntime) and "in-process worker" in where
        for role in ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA"):
            turn = AgentTurn("d-f", f"{role.lower()}-agent-1", role, 0, "Write a parser")
            turn = AgentTurn(**{**turn.__dict__, "sampling": Sampling(model="loadgen")})
            result = await runtime.run_turn(turn)
            assert result.content and result.agent_id == turn.agent_id
        scores = await runtime.assess(
            AssessmentInput("d-f", "DEV", "t", "", (), (Candidate("dev-agent-1", "no code"),))
        )
        assert [a.agent_id for a in scores] == ["dev-agent-1"]
