"""The council RPCs on a whole node, in the seed's messages: the seed's councils on first start,
every bad request refused naming its field with nothing recorded, councils that survive a
restart, and deliberations that take the council as it stands when they start (a registered
agent at once, with its own endpoint; an unregistered one never; one in flight keeps its own)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio

from aggregates import Deliberation, council_id, deliberation_id
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)


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


@dataclass
class Rig:
    node: FleetNode
    client: FleetClient
    llm: LoadGenServer
    settings: Settings

    def council_events(self, role: str) -> list[str]:
        assert self.node.app is not None
        return [type(e).__name__ for e in self.node.app.events.get(council_id(role))]

    def users(self, task_id: str) -> set[str]:
        """Agent ids that called the model for ``task_id``'s deliberation."""
        marker = str(deliberation_id(task_id))
        return {
            str(b.get("user"))
            for b in self.llm.requests
            if marker in str(b.get("messages")) or task_id in str(b.get("messages"))
        }


@pytest_asyncio.fixture
async def rig(tmp_path: Path, nats_url: str, nats_stream: str) -> AsyncIterator[Rig]:
    async with LoadGenServer("instant") as lg:
        s = _settings(tmp_path, nats_url, nats_stream, vllm_url=lg.url, vllm_model="loadgen")
        async with FleetNode(s) as node, FleetClient(node.endpoints.grpc) as c:
            yield Rig(node, c, lg, s)


async def _councils(c: FleetClient, role: str = "") -> list[pb.CouncilInfo]:
    resp = await c.stub.ListCouncils(pb.ListCouncilsRequest(role_filter=role, include_agents=True))
    return list(resp.councils)


def _ids(info: pb.CouncilInfo) -> list[str]:
    return [a.agent_id for a in info.agents]


async def _authors(c: FleetClient, task_id: str) -> list[str]:
    final = await c.wait(task_id, timeout=60)
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message
    return sorted(r.proposal.author_id for r in final.results)


async def test_first_start_creates_the_seeds_councils(rig: Rig) -> None:
    councils = await _councils(rig.client)
    assert [(i.role, i.num_agents, i.status) for i in councils] == [
        (r, 3, "active") for r in ("ARCHITECT", "DATA", "DEV", "DEVOPS", "QA")
    ]
    dev = next(i for i in councils if i.role == "DEV")
    assert _ids(dev) == ["agent-dev-001", "agent-dev-002", "agent-dev-003"]
    assert dev.council_id == str(council_id("DEV"))
    # what they are doing, from the events (nothing ran yet), never a constant "ready"
    assert all(a.status in ("idle", "unknown") and a.role == "DEV" for a in dev.agents)
    assert dev.model == "loadgen"  # no model of its own: the node's


@pytest.mark.parametrize(
    ("call", "code", "field"),
    [
        ("CreateCouncil", {"role": "CHEF", "num_agents": 2}, "role"),
        ("CreateCouncil", {"role": "DATA", "num_agents": 0}, "num_agents"),
        ("CreateCouncil", {"role": "DATA", "num_agents": 17}, "num_agents"),
        ("CreateCouncil", {"role": "DEV", "num_agents": 2}, "role"),  # exists
        (
            "CreateCouncil",
            {"role": "DATA", "num_agents": 2, "config": {"deliberation_rounds": 9}},
            "config.deliberation_rounds",
        ),
        ("RegisterAgent", {"role": "CHEF", "agent_id": "a"}, "role"),
        ("RegisterAgent", {"role": "DEV", "agent_id": "agent-dev-001"}, "agent_id"),
        ("RegisterAgent", {"role": "DEV", "agent_id": "agent-qa-001"}, "agent_id"),
        ("RegisterAgent", {"role": "DEV", "agent_id": "has space"}, "agent_id"),
        ("RegisterAgent", {"role": "DEV", "agent_id": ""}, "agent_id"),
        ("UnregisterAgent", {"role": "DEV", "agent_id": "nobody"}, "agent_id"),
        ("UnregisterAgent", {"role": "CHEF", "agent_id": "agent-dev-001"}, "role"),
        ("DeleteCouncil", {"role": "CHEF"}, "role"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_bad_requests_name_the_field_and_change_nothing(
    rig: Rig, call: str, code: dict[str, Any], field: str
) -> None:
    from google.protobuf.json_format import ParseDict

    before = {r: rig.council_events(r) for r in ("DEV", "QA", "DATA")}
    method = getattr(rig.client.stub, call)
    request = ParseDict(code, getattr(pb, f"{call}Request")())
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await method(request)
    assert e.value.code() in (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
    )
    assert (e.value.details() or "").startswith(f"{field}:"), e.value.details()
    assert {r: rig.council_events(r) for r in ("DEV", "QA", "DATA")} == before


async def test_council_lifecycle_through_the_rpcs_survives_a_restart(
    rig: Rig, tmp_path: Path
) -> None:
    c = rig.client
    deleted = await c.stub.DeleteCouncil(pb.DeleteCouncilRequest(role="qa"))
    assert (deleted.success, deleted.agents_removed) == (True, 3)
    assert await _councils(c, "QA") == []
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await c.stub.RegisterAgent(pb.RegisterAgentRequest(agent_id="x", role="QA"))
    assert gone.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    created = await c.stub.CreateCouncil(
        pb.CreateCouncilRequest(
            role="QA",
            num_agents=2,
            config=pb.CouncilConfig(deliberation_rounds=2, model_profile="small"),
        )
    )
    assert list(created.agent_ids) == ["agent-qa-001", "agent-qa-002"]
    assert created.council_id == str(council_id("QA"))
    joined = await c.stub.RegisterAgent(
        pb.RegisterAgentRequest(
            agent_id="qa-extra",
            role="QA",
            capabilities=pb.AgentCapabilities(model_profile="large"),
            metadata={"team": "blue"},
        )
    )
    assert joined.success and joined.council_id == str(council_id("QA"))
    left = await c.stub.UnregisterAgent(
        pb.UnregisterAgentRequest(agent_id="agent-qa-001", role="QA")
    )
    assert left.success
    (qa,) = await _councils(c, "QA")
    assert _ids(qa) == ["agent-qa-002", "qa-extra"]
    assert [a.capabilities.model_profile for a in qa.agents] == ["small", "large"]
    assert rig.council_events("QA")[-6:] == [
        "Deleted",
        "Recreated",
        "AgentRegistered",
        "AgentRegistered",
        "AgentRegistered",
        "AgentUnregistered",
    ]

    # A second node on the same stream (a restart of every process): the same councils, and
    # its start-up records nothing (the configuration was applied once already).
    history = rig.council_events("QA")
    s = rig.settings
    other = _settings(
        tmp_path / "second",
        s.nats_url or "",
        s.stream,
        components=frozenset({"api"}),
    )
    async with FleetNode(other) as node, FleetClient(node.endpoints.grpc) as c2:
        (again,) = await _councils(c2, "QA")
        assert _ids(again) == ["agent-qa-002", "qa-extra"]
        assert len(await _councils(c2)) == 5
    assert rig.council_events("QA") == history


async def test_deliberations_take_the_council_as_it_stands_when_they_start(rig: Rig) -> None:
    c = rig.client
    async with LoadGenServer("instant") as own:
        await c.stub.RegisterAgent(
            pb.RegisterAgentRequest(agent_id="dev-new", role="DEV", endpoint=own.url)
        )
        await c.stub.UnregisterAgent(
            pb.UnregisterAgentRequest(agent_id="agent-dev-002", role="DEV")
        )
        await c.deliberate("write fib", role="DEV", num_agents=3, task_id="seated-1")
        assert await _authors(c, "seated-1") == ["agent-dev-001", "agent-dev-003", "dev-new"]
        # the registered agent's calls went to its own endpoint, and only its calls
        assert {b.get("user") for b in own.requests} == {"dev-new"}
        assert "dev-new" not in {b.get("user") for b in rig.llm.requests}

        # more agents than members: the members sit again, under distinct ids
        await c.deliberate("write gcd", role="DEV", num_agents=4, task_id="seated-2")
        assert await _authors(c, "seated-2") == [
            "agent-dev-001",
            "agent-dev-001.2",
            "agent-dev-003",
            "dev-new",
        ]
    assert rig.node.store is not None
    d: Deliberation = await rig.node.store.get(deliberation_id("seated-2"))
    assert d.seats["agent-dev-001.2"]["member"] == "agent-dev-001"
    assert d.council_version > 0


async def test_a_deliberation_in_flight_keeps_its_council(rig: Rig) -> None:
    c = rig.client
    rig.llm.delay_s = 1.0
    await c.deliberate("write median", role="DEV", num_agents=3, task_id="in-flight")

    async def started() -> bool:
        r = await c.result("in-flight")
        return r.status == pb.DELIBERATION_STATUS_IN_PROGRESS

    await eventually(started, what="the deliberation started")
    await c.stub.UnregisterAgent(pb.UnregisterAgentRequest(agent_id="agent-dev-003", role="DEV"))
    await c.stub.RegisterAgent(pb.RegisterAgentRequest(agent_id="late", role="DEV"))
    rig.llm.delay_s = 0.0
    assert await _authors(c, "in-flight") == ["agent-dev-001", "agent-dev-002", "agent-dev-003"]
    await c.deliberate("write mode", role="DEV", num_agents=3, task_id="after")
    assert await _authors(c, "after") == ["agent-dev-001", "agent-dev-002", "late"]


async def test_the_last_agent_stays_while_deliberations_wait(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    """No dispatcher here: a requested deliberation stays PENDING."""
    s = _settings(tmp_path, nats_url, nats_stream, components=frozenset({"api", "projectors"}))
    async with FleetNode(s) as node, FleetClient(node.endpoints.grpc) as c:
        await c.stub.DeleteCouncil(pb.DeleteCouncilRequest(role="DATA"))
        await c.stub.CreateCouncil(pb.CreateCouncilRequest(role="DATA", num_agents=1))
        await c.deliberate("clean the table", role="DATA", num_agents=2, task_id="waits")
        await node.wait_projected()
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await c.stub.UnregisterAgent(
                pb.UnregisterAgentRequest(agent_id="agent-data-001", role="DATA")
            )
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert (e.value.details() or "").startswith("agent_id:")
        assert "waiting" in (e.value.details() or "")
        (data,) = await _councils(c, "DATA")
        assert _ids(data) == ["agent-data-001"]


async def test_cli_councils_and_agents(rig: Rig) -> None:
    """The README's commands, as a user types them: JSON out, one-line errors, exit codes."""
    from tests.integration.fleet._cli import fleet

    at = ("--address", rig.node.endpoints.grpc)
    joined = await fleet("agents", "register", "dev-cli", "--role", "dev", "--meta", "k=v", *at)
    assert joined.returncode == 0, joined.stderr
    assert "dev-cli joined the DEV council" in joined.stdout
    listed = await fleet("councils", "list", "--role", "DEV", "--json", *at)
    (dev,) = json.loads(listed.stdout)["councils"]
    assert [a["agent_id"] for a in dev["agents"]][-1] == "dev-cli"

    bad = await fleet("councils", "create", "DATA", "--agents", "17", *at)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: INVALID_ARGUMENT: num_agents: 17 not in 1..16"
    ]
    dup = await fleet("agents", "register", "dev-cli", "--role", "DEV", *at)
    assert dup.returncode == 2 and "agent_id" in dup.stderr

    gone = await fleet("councils", "delete", "DATA", "--json", *at)
    assert json.loads(gone.stdout) == {"success": True, "agents_removed": 3}
    made = await fleet("councils", "create", "data", "--agents", "2", "--json", *at)
    assert json.loads(made.stdout)["agent_ids"] == ["agent-data-001", "agent-data-002"]
    left = await fleet("agents", "unregister", "dev-cli", "--role", "DEV", "--json", *at)
    assert json.loads(left.stdout)["success"] is True

    # the council's history, replayed from the events (1 created, 2-4 the seed's agents, 5 the
    # configuration applied, 6 dev-cli registered, 7 unregistered): nothing was edited
    store = {"NATS_URL": rig.settings.nats_url or "", "FLEET_STREAM": rig.settings.stream}
    replayed = await fleet("replay", "--council", "dev", "--json", env=store)
    assert replayed.returncode == 0, replayed.stderr
    history = json.loads(replayed.stdout)
    assert [e["type"] for e in history["events"]][-2:] == ["AgentRegistered", "AgentUnregistered"]
    assert [m["agent_id"] for m in history["members"]] == [
        "agent-dev-001",
        "agent-dev-002",
        "agent-dev-003",
    ]
    earlier = await fleet("replay", "--council", "DEV", "--to-version", "6", "--json", env=store)
    assert "dev-cli" in [m["agent_id"] for m in json.loads(earlier.stdout)["members"]]


async def test_a_changed_fleet_councils_is_applied_as_events_on_restart(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    api = frozenset({"api"})
    first = _settings(tmp_path / "a", nats_url, nats_stream, components=api)
    async with FleetNode(first) as node, FleetClient(node.endpoints.grpc) as c:
        await c.stub.RegisterAgent(pb.RegisterAgentRequest(agent_id="dev-api", role="DEV"))
        assert node.app is not None
        before = list(node.app.events.get(council_id("DEV")))
    councils = '{"DEV": {"agents": [{"model": "big"}, {}]}}'
    second = _settings(tmp_path / "b", nats_url, nats_stream, components=api, councils=councils)
    async with FleetNode(second) as node, FleetClient(node.endpoints.grpc) as c:
        (dev,) = await _councils(c, "DEV")
        assert node.app is not None
        after = list(node.app.events.get(council_id("DEV")))
    # the API's agent stays; the configuration's third agent leaves; the rest is as before
    assert _ids(dev) == ["agent-dev-001", "agent-dev-002", "dev-api"]
    assert after[: len(before)] == before  # history kept, only appended to
    assert [type(e).__name__ for e in after[len(before) :]] == [
        "AgentUnregistered",
        "AgentReconfigured",
        "Configured",
    ]
