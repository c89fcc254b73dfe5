"""What the seed's services ask is done, or refused naming the field; no work is invented.

On a whole node (real NATS JetStream, the agents' real client against the load generator, which
records every request it gets): a council's CouncilConfig shapes its deliberations (rounds, peer
review, the model asked for, temperature and max_tokens) unless a request says otherwise;
RegisterAgent's model_profile is the model that agent's endpoint is asked for;
TaskConstraints.max_iterations caps the rounds; Orchestrate's context_options shape the context
in the agents' prompts; what Fleet cannot honour is INVALID_ARGUMENT naming the field; a plan
that names no roles dispatches nothing, and a role without a council is skipped, both on record
and on the integration stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio

from aggregates import Deliberation, deliberation_id, plan_id_of
from application.errors import DeliberationNotFoundError
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.outbox import read_all

pytestmark = pytest.mark.timeout(120)


@dataclass
class Rig:
    node: FleetNode
    client: FleetClient
    llm: LoadGenServer

    def asked(self, marker: str) -> list[dict[str, Any]]:
        """The model requests whose prompt carries ``marker`` (a task's unique text)."""
        return [b for b in self.llm.requests if marker in json.dumps(b.get("messages"))]

    def events(self, task_id: str) -> list[str]:
        assert self.node.app is not None
        return [type(e).__name__ for e in self.node.app.events.get(deliberation_id(task_id))]

    def plan_events(self, plan_id: str) -> list[str]:
        assert self.node.app is not None
        return [type(e).__name__ for e in self.node.app.events.get(plan_id_of(plan_id))]

    async def deliberation(self, task_id: str) -> Deliberation:
        assert self.node.store is not None
        return await self.node.store.get(deliberation_id(task_id))


def _settings(tmp_path: Path, nats_url: str, nats_stream: str, **more: Any) -> Settings:
    return Settings(
        data_dir=tmp_path,
        nats_url=nats_url,
        stream=nats_stream,
        cache_enabled=False,
        grpc_port=free_port(),
        agent_runtime="local",
        plan_consumer=False,
        **more,
    )


@pytest_asyncio.fixture
async def rig(tmp_path: Path, nats_url: str, nats_stream: str) -> AsyncIterator[Rig]:
    async with LoadGenServer("instant") as lg:
        s = _settings(tmp_path, nats_url, nats_stream, vllm_url=lg.url, vllm_model="loadgen")
        async with FleetNode(s) as node, FleetClient(node.endpoints.grpc) as c:
            yield Rig(node, c, lg)


async def _completed(c: FleetClient, task_id: str) -> None:
    final = await c.wait(task_id, timeout=60)
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message


async def test_a_councils_config_shapes_its_deliberations_unless_the_request_says_otherwise(
    rig: Rig,
) -> None:
    c = rig.client
    await c.stub.DeleteCouncil(pb.DeleteCouncilRequest(role="DATA"))
    await c.stub.CreateCouncil(
        pb.CreateCouncilRequest(
            role="DATA",
            num_agents=2,
            config=pb.CouncilConfig(
                deliberation_rounds=2,
                enable_peer_review=False,
                model_profile="data-model",
                custom_params={"temperature": "0.1", "max_tokens": "50"},
            ),
        )
    )
    (data,) = (await c.stub.ListCouncils(pb.ListCouncilsRequest(role_filter="DATA"))).councils
    assert data.model == "data-model"

    # No rounds in the request: the council's two, its peer review (off), its model and params.
    await c.deliberate("clean table ZQX-1", role="DATA", num_agents=2, task_id="cfg-1")
    await _completed(c, "cfg-1")
    d = await rig.deliberation("cfg-1")
    assert (d.rounds, d.peer_review) == (2, False)
    events = rig.events("cfg-1")
    assert events.count("ProposalRevised") == 2  # the second round ran
    assert "PeerRatingsReceived" not in events  # peer review off: nobody rated
    asked = rig.asked("ZQX-1")
    assert {b["model"] for b in asked} == {"data-model"}
    answers = [b for b in asked if b.get("temperature") != 0.0]  # proposals, not reviews
    assert len(answers) == 4  # 2 agents × 2 rounds
    assert {(b["temperature"], b["max_tokens"]) for b in answers} == {(0.1, 50)}

    # The request names its rounds: they win; max_iterations caps whatever gave them.
    await c.deliberate("clean table ZQX-2", role="DATA", num_agents=2, task_id="cfg-2", rounds=1)
    await _completed(c, "cfg-2")
    assert (await rig.deliberation("cfg-2")).rounds == 1
    capped = pb.DeliberateRequest(
        task_id="cfg-3",
        task_description="clean table ZQX-3",
        role="DATA",
        num_agents=2,
        constraints=pb.TaskConstraints(max_iterations=1),
    )
    await c.stub.Deliberate(capped)
    await _completed(c, "cfg-3")
    assert (await rig.deliberation("cfg-3")).rounds == 1
    assert "ProposalRevised" not in rig.events("cfg-3")


async def test_register_agents_model_profile_is_the_model_its_endpoint_is_asked_for(
    rig: Rig,
) -> None:
    c = rig.client
    await c.stub.RegisterAgent(
        pb.RegisterAgentRequest(
            agent_id="dev-big",
            role="DEV",
            capabilities=pb.AgentCapabilities(model_profile="big-model"),
        )
    )
    await c.deliberate("write fib QPW-7", role="DEV", num_agents=4, task_id="profile-1")
    await _completed(c, "profile-1")
    asked = rig.asked("QPW-7")
    by_model = {b["user"]: b["model"] for b in asked if b.get("temperature") != 0.0}
    assert by_model == {
        "agent-dev-001": "loadgen",
        "agent-dev-002": "loadgen",
        "agent-dev-003": "loadgen",
        "dev-big": "big-model",
    }


@pytest.mark.parametrize(
    ("call", "request_json", "field"),
    [
        (
            "CreateCouncil",
            {"role": "DATA", "num_agents": 1, "config": {"custom_params": {"top_k": "5"}}},
            "config.custom_params.top_k",
        ),
        (
            "CreateCouncil",
            {"role": "DATA", "num_agents": 1, "config": {"custom_params": {"temperature": "x"}}},
            "config.custom_params.temperature",
        ),
        (
            "Deliberate",
            {"task_description": "t", "role": "DEV", "constraints": {"max_iterations": -1}},
            "constraints.max_iterations",
        ),
        (
            "Orchestrate",
            {"task_description": "t", "role": "DEV", "options": {"custom_params": {"x": "1"}}},
            "options.custom_params.x",
        ),
        (
            "Orchestrate",
            {"task_description": "t", "role": "DEV", "context_options": {"max_events": 3}},
            "context_options",
        ),
        (
            "Orchestrate",
            {
                "task_description": "t",
                "role": "DEV",
                "story_id": "s-1",
                "context_options": {"scopes": ["weather"]},
            },
            "context_options.scopes",
        ),
        (
            "Orchestrate",
            {
                "task_description": "t",
                "role": "DEV",
                "story_id": "s-1",
                "context_options": {"max_events": -2},
            },
            "context_options.max_events",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_what_fleet_cannot_honour_is_refused_naming_the_field(
    rig: Rig, call: str, request_json: dict[str, Any], field: str
) -> None:
    from google.protobuf.json_format import ParseDict

    if call == "CreateCouncil":
        await rig.client.stub.DeleteCouncil(pb.DeleteCouncilRequest(role="DATA"))
    kind = {"Deliberate": "DeliberateRequest"}.get(call, f"{call}Request")
    request = ParseDict(request_json, getattr(pb, kind)())
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await getattr(rig.client.stub, call)(request)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (e.value.details() or "").startswith(f"{field}:"), e.value.details()


async def test_orchestrates_context_options_shape_what_its_agents_are_told(rig: Rig) -> None:
    c = rig.client
    plain = pb.OrchestrateRequest(
        task_id="ctx-plain", task_description="write fib KJH-1", role="DEV", story_id="US-ctx"
    )
    await c.stub.Orchestrate(plain, timeout=60)
    assert all("Timeline (newest first)" not in json.dumps(b) for b in rig.asked("KJH-1"))

    shaped = pb.OrchestrateRequest(
        task_id="ctx-shaped",
        task_description="write fib KJH-2",
        role="DEV",
        story_id="US-ctx",
        context_options=pb.ContextOptions(
            include_timeline=True, include_decisions=True, max_events=5
        ),
    )
    resp = await c.stub.Orchestrate(shaped, timeout=60)
    assert resp.winner.proposal.author_id
    d = await rig.deliberation("ctx-shaped")
    assert d.context_options["include_timeline"] is True
    proposals = [b for b in rig.asked("KJH-2") if b.get("temperature") != 0.0]  # not reviews
    told = [json.dumps(b["messages"]) for b in proposals]
    assert len(told) == 3 and all("Timeline (newest first)" in t for t in told)
    assert all("DEV deliberation ctx-shaped requested" in t for t in told)  # the timeline's line


async def test_no_work_is_invented_for_a_plan_without_roles_or_a_role_without_a_council(
    rig: Rig, nats_url: str
) -> None:
    c = rig.client
    none = await c.stub.ApprovePlan(pb.ApprovePlanRequest(plan_id="PL-none", story_id="US-1"))
    assert list(none.task_ids) == []
    assert rig.plan_events("PL-none") == ["Approved", "NothingDispatched"]
    twin = await c.stub.ProcessPlanningEvent(
        pb.PlanningEventRequest(event_type="PLAN_APPROVED", case_id="US-2", plan_id="PL-twin")
    )
    assert list(twin.derived_task_ids) == []
    assert "nothing dispatched: the approval named no roles" in twin.message

    await c.stub.DeleteCouncil(pb.DeleteCouncilRequest(role="DATA"))
    some = await c.stub.ApprovePlan(
        pb.ApprovePlanRequest(plan_id="PL-some", story_id="US-3", roles=["DEV", "DATA"])
    )
    assert list(some.task_ids) == ["plan:PL-some:DEV"]
    assert rig.plan_events("PL-some") == ["Approved", "RoleSkipped", "DeliberationsRequested"]
    with pytest.raises(DeliberationNotFoundError):
        await rig.deliberation("plan:PL-some:DATA")
    # A deliberation for the role is refused, not given default agents.
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await c.deliberate("clean", role="DATA", task_id="no-council")
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (e.value.details() or "").startswith("role: the DATA role has no council")

    # ... and the rest of the seed system hears it.
    await rig.node.wait_projected()

    async def skipped() -> list[dict[str, Any]]:
        got = await read_all(nats_url, at_least=1, timeout=2.0)
        return [
            r.body
            for r in got
            if r.subject == "orchestration.plan.skipped"
            and r.body["plan_id"] in ("PL-none", "PL-some")
        ]

    from tests.support.waiting import eventually

    async def both() -> bool:
        return len(await skipped()) == 2

    await eventually(both, what="both skips published")
    bodies = {(b["plan_id"], b["role"]): b["reason"] for b in await skipped()}
    assert bodies == {
        ("PL-none", ""): "the approval named no roles",
        ("PL-some", "DATA"): "the DATA role has no council: no deliberation requested",
    }


async def test_auto_init_councils_off_creates_no_councils_and_invents_no_agents(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    s = _settings(
        tmp_path, nats_url, nats_stream, auto_init_councils=False, components=frozenset({"api"})
    )
    async with FleetNode(s) as node, FleetClient(node.endpoints.grpc) as c:
        listed = await c.stub.ListCouncils(pb.ListCouncilsRequest())
        assert list(listed.councils) == []
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await c.deliberate("write fib", role="DEV", task_id="nobody")
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert (e.value.details() or "").startswith("role:")
