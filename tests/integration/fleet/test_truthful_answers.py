"""What a node tells the seed system's services is true (a real node, its agents' real client
against the load generator, real JetStream):

* a check that did not run is never passed: with the sandbox off, a plan's DEV deliberation read
  through the *seed's own* proto claims no dry run, no exit code and no ``all_passed``;
* each proposal carries the time it was received (its event's) and its earlier versions;
* GetStatus stops saying "healthy" when the model endpoint stops, and says it again once it is
  back;
* DeriveSubtasks with no council able to answer is UNAVAILABLE and records nothing, and a later
  call derives for real;
* an agent's status in ListCouncils says what it is doing (failing, busy, idle).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio

from aggregates.derivation import Derivation, derivation_id
from application.errors import RecordNotFoundError
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e.test_seed_client import generate_seed_stubs, ok, seed_client
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(180)

ASK = "Split this approved plan into at most"
SUBTASKS = '["write the CSV writer", "add the download endpoint"]'
DONE = (pb.DELIBERATION_STATUS_COMPLETED, pb.DELIBERATION_STATUS_FAILED)


class Node:
    def __init__(self, node: FleetNode, client: FleetClient, model: LoadGenServer) -> None:
        self.node, self.c, self.model = node, client, model

    async def result(self, task_id: str) -> pb.GetDeliberationResultResponse:
        async def ended() -> pb.GetDeliberationResultResponse | None:
            r = await self.c.stub.GetDeliberationResult(
                pb.GetDeliberationResultRequest(task_id=task_id)
            )
            return r if r.status in DONE else None

        return await eventually(ended, timeout=60, what=f"{task_id} ends")

    async def status(self) -> pb.GetStatusResponse:
        return await self.c.stub.GetStatus(pb.GetStatusRequest())


@pytest_asyncio.fixture
async def node(tmp_path: Path, nats_url: str, nats_stream: str) -> AsyncIterator[Node]:
    async with LoadGenServer("scripted", script={ASK: SUBTASKS}) as model:
        settings = Settings(
            data_dir=tmp_path,
            nats_url=nats_url,
            stream=nats_stream,
            cache_enabled=False,
            grpc_port=free_port(),
            vllm_url=model.url,
            vllm_model="loadgen",
            agent_runtime="local",
            sandbox="off",
            agent_call_timeout=5.0,
        )
        async with FleetNode(settings) as n, FleetClient(n.endpoints.grpc) as c:
            yield Node(n, c, model)


async def test_with_no_sandbox_the_seed_reads_no_dry_run_and_no_all_passed(
    node: Node, tmp_path: Path
) -> None:
    await node.c.stub.ApprovePlan(
        pb.ApprovePlanRequest(
            plan_id="PL-T1", story_id="US-T1", roles=["DEV"], description="Parse ISO dates"
        )
    )
    fleet_view = await node.result("plan:PL-T1:DEV")
    assert fleet_view.status == pb.DELIBERATION_STATUS_COMPLETED, fleet_view.error_message

    gen = generate_seed_stubs(tmp_path / "seed_stubs")
    [answer] = await seed_client(
        gen,
        node.node.endpoints.grpc,
        [{"rpc": "GetDeliberationResult", "request": {"task_id": "plan:PL-T1:DEV"}}],
    )
    results = ok(answer)["results"]
    assert results
    for r in results:
        checks = r["checks"]
        dryrun = checks["dryrun"]
        assert not dryrun.get("passed", False), dryrun  # nothing ran: never passed
        assert dryrun.get("exit_code", 0) == -1, dryrun  # and no exit code claimed
        assert dryrun["message"].startswith("not run: "), dryrun  # it says why
        assert not checks.get("all_passed", False), checks
        for extra in checks.get("additional_checks", []):
            if extra.get("details", {}).get("applicable") == "false":
                assert not extra.get("passed", False), extra
                assert extra["message"].startswith("not applicable: "), extra
        assert "cross_exec" in {c["check_type"] for c in checks.get("additional_checks", [])}

    # Fleet's own message tells a recorded score from none.
    assert all(r.scored for r in fleet_view.results)


async def test_each_proposal_carries_its_own_time_and_its_earlier_versions(node: Node) -> None:
    await node.c.stub.Deliberate(
        pb.DeliberateRequest(
            task_id="times-1", task_description="Write fib", role="DEV", rounds=2, num_agents=3
        )
    )
    r = await node.result("times-1")
    history = await node.c.stub.GetDeliberationHistory(
        pb.GetDeliberationHistoryRequest(task_id="times-1")
    )
    received: dict[str, list[tuple[int, str]]] = {}
    for e in history.events:
        if e.type in ("ProposalReceived", "ProposalRevised"):
            data = json.loads(e.data_json)
            received.setdefault(data["agent_id"], []).append((e.timestamp_ms, data["content"]))
    assert len(received) == 3
    ended = max(e.timestamp_ms for e in history.events)  # what every proposal said before
    for p in r.results:
        versions = received[p.proposal.author_id]
        # its own event's time (the agents answer in the same few ms here, so equal times
        # between agents are possible: each is still its own proposal's)
        assert p.proposal.created_at_ms == versions[-1][0] < ended
        assert p.proposal.content == versions[-1][1]
        assert list(p.proposal.revisions) == [c for _, c in versions[:-1]]
        assert len(p.proposal.revisions) == 1  # the round-0 proposal it revised


async def test_get_status_follows_the_model_endpoint_down_and_up(node: Node) -> None:
    async def said(word: str) -> pb.GetStatusResponse | None:
        s = await node.status()
        return s if s.status == word else None

    up = await eventually(lambda: said("healthy"), timeout=30, what="healthy at first")
    await node.model.stop()
    down = await eventually(
        lambda: said("unhealthy"), timeout=15, what="unhealthy with the model endpoint stopped"
    )
    assert list(up.problems) == []
    assert any(node.model.url in p for p in down.problems), down.problems
    await node.model.start()  # the same port again
    await eventually(lambda: said("healthy"), timeout=15, what="healthy once it is back")


async def test_derive_subtasks_is_unavailable_without_councils_then_derives(node: Node) -> None:
    await node.c.stub.ApprovePlan(
        pb.ApprovePlanRequest(plan_id="PL-T2", story_id="US-T2", roles=["DEV", "QA"])
    )
    request = pb.DeriveSubtasksRequest(case_id="US-T2", plan_id="PL-T2")
    await node.model.stop()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await node.c.stub.DeriveSubtasks(request)
    assert err.value.code() is grpc.StatusCode.UNAVAILABLE
    details = err.value.details() or ""
    assert "DEV" in details and "nothing recorded" in details
    store = node.node.store
    assert store is not None
    d_id = derivation_id("PL-T2", ["DEV", "QA"], 5, False)
    with pytest.raises(RecordNotFoundError):
        await store.get_record(d_id, Derivation)  # nothing to unlearn

    await node.model.start()
    derived = await node.c.stub.DeriveSubtasks(request)
    assert uuid.UUID(derived.derivation_id) == d_id
    assert [(t.role, t.description) for t in derived.tasks] == [
        ("DEV", "write the CSV writer"),
        ("DEV", "add the download endpoint"),
        ("QA", "write the CSV writer"),
        ("QA", "add the download endpoint"),
    ]
    recorded = await store.get_record(d_id, Derivation)
    assert recorded.fallback_roles == []


async def test_an_agents_status_says_what_it_is_doing(node: Node) -> None:
    node.model.modes_by_user["agent-qa-001"] = "fail"
    await node.c.stub.Deliberate(
        pb.DeliberateRequest(task_id="qa-1", task_description="Test fib", role="QA", num_agents=3)
    )
    await node.result("qa-1")

    async def statuses() -> dict[str, str] | None:
        listing = await node.c.stub.ListCouncils(
            pb.ListCouncilsRequest(role_filter="QA", include_agents=True)
        )
        got = {a.agent_id: a.status for c in listing.councils for a in c.agents}
        return got if got and all(s != "unknown" for s in got.values()) else None

    got: dict[str, Any] = await eventually(statuses, timeout=15, what="agent statuses known")
    assert got["agent-qa-001"].startswith("failing (1 call failed in a row: "), got
    assert got["agent-qa-002"] == "idle" and got["agent-qa-003"] == "idle", got
    assert "ready" not in got.values()
