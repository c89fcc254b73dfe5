"""ProcessPlanningEvent and DeriveSubtasks on a whole node (real JetStream, the agents' real
client against the load generator): an approval starts the plan's deliberations, a transition
is recorded once, an unknown event is answered, not refused; a derivation asks each role's
council once, is UNAVAILABLE (recording nothing) while a council cannot answer and derives on a
retry, orders and chains roles, is idempotent, and requests the tasks' deliberations when asked
to publish.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import grpc
import pytest

from aggregates.derivation import Derivation
from aggregates.story import Story, story_id_of
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)

ASK = "Split this approved plan into at most"


async def test_planning_events_and_subtask_derivation(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    script = {ASK: 'Sure:\n["write the CSV writer", "add the download endpoint", "extra"]'}
    async with LoadGenServer("scripted", script=script) as lg:
        lg.modes_by_user["agent-qa-001"] = "fail"  # QA's first agent cannot answer, until told
        settings = Settings(
            data_dir=tmp_path,
            nats_url=nats_url,
            stream=nats_stream,
            cache_enabled=False,
            grpc_port=free_port(),
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_runtime="local",
            plan_consumer=False,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            approved = await c.stub.ProcessPlanningEvent(
                pb.PlanningEventRequest(
                    event_type="PLAN_APPROVED",
                    plan_id="PL-9",
                    case_id="US-9",
                    metadata={"roles": "DEV,QA", "description": "Export invoices as CSV"},
                )
            )
            assert approved.processed
            assert list(approved.derived_task_ids) == ["plan:PL-9:DEV", "plan:PL-9:QA"]

            move = pb.PlanningEventRequest(
                event_type="TRANSITION", case_id="US-9", from_state="DESIGN", to_state="BUILD"
            )
            first = await c.stub.ProcessPlanningEvent(move)
            again = await c.stub.ProcessPlanningEvent(move)
            assert first.processed and "moved to BUILD" in first.message
            assert again.processed and "already" in again.message
            assert node.store is not None
            story = await node.store.get_record(story_id_of("US-9"), Story)
            assert [(f.value, t.value) for f, t, _ in story.transitions] == [("DESIGN", "BUILD")]

            other = await c.stub.ProcessPlanningEvent(
                pb.PlanningEventRequest(event_type="CASE_CREATED", case_id="US-9")
            )
            assert not other.processed and "CASE_CREATED" in other.message

            req = pb.DeriveSubtasksRequest(
                case_id="US-9",
                plan_id="PL-9",
                strategy=pb.DerivationStrategy(
                    dependency_order=["QA", "DEV"], max_tasks_per_role=2, auto_publish_to_nats=True
                ),
            )
            with pytest.raises(grpc.aio.AioRpcError) as err:  # QA's council cannot answer
                await c.stub.DeriveSubtasks(req)
            assert err.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "QA: agent-qa-001 failed" in (err.value.details() or "")
            lg.modes_by_user.pop("agent-qa-001")  # it can now: a retry derives for real
            before = len(lg.requests)
            derived = await c.stub.DeriveSubtasks(req)
            asked = [r for r in lg.requests[before:] if ASK in str(r["messages"])]
            asks = sum(ASK in str(r["messages"]) for r in lg.requests)
            assert sorted(r["user"] for r in asked) == ["agent-dev-001", "agent-qa-001"]
            tasks = [
                (t.task_id, t.role, t.description, list(t.dependencies)) for t in derived.tasks
            ]
            qa = ["sub:PL-9:QA:1", "sub:PL-9:QA:2"]
            assert tasks == [
                ("sub:PL-9:QA:1", "QA", "write the CSV writer", []),
                ("sub:PL-9:QA:2", "QA", "add the download endpoint", []),
                ("sub:PL-9:DEV:1", "DEV", "write the CSV writer", qa),
                ("sub:PL-9:DEV:2", "DEV", "add the download endpoint", qa),
            ]  # capped at two, DEV chained after QA
            assert derived.total_tasks == 4
            recorded = await node.store.get_record(uuid.UUID(derived.derivation_id), Derivation)
            assert recorded.fallback_roles == []

            retried = await c.stub.DeriveSubtasks(req)
            assert retried.derivation_id == derived.derivation_id
            assert list(retried.tasks) == list(derived.tasks)
            assert sum(ASK in str(r["messages"]) for r in lg.requests) == asks  # not asked again
            for task_id in ("sub:PL-9:QA:1", "sub:PL-9:DEV:2"):  # published: deliberations exist
                r = await c.stub.GetDeliberationResult(
                    pb.GetDeliberationResultRequest(task_id=task_id)
                )
                assert r.task_id == task_id

            with pytest.raises(grpc.aio.AioRpcError) as err:
                await c.stub.DeriveSubtasks(pb.DeriveSubtasksRequest(plan_id="PL-never"))
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "plan_id" in (err.value.details() or "")

            # The plan's deliberations ran with the story's context in their agents' prompts.
            async def ended(task_id: str) -> bool:
                r = await c.stub.GetDeliberationResult(
                    pb.GetDeliberationResultRequest(task_id=task_id)
                )
                return r.status in (pb.DELIBERATION_STATUS_COMPLETED, pb.DELIBERATION_STATUS_FAILED)

            for task_id in approved.derived_task_ids:
                await eventually(lambda t=task_id: ended(t), timeout=30, what=f"{task_id} ends")
            prompts = [str(r["messages"]) for r in lg.requests if r.get("user") == "agent-dev-002"]
            assert any("Context:" in p and "Story US-9 (phase BUILD)" in p for p in prompts)
            await node.wait_projected()

            # GetTaskContext: the story, its plan, the other role's decision, the timeline.
            got = await c.stub.GetTaskContext(
                pb.GetTaskContextRequest(task_id="plan:PL-9:QA", phase="test")
            )
            dev = await c.stub.GetDeliberationResult(
                pb.GetDeliberationResultRequest(task_id="plan:PL-9:DEV")
            )
            assert "Role: QA." in got.blocks.system and "Phase: TEST." in got.blocks.system
            assert "Story US-9 (phase BUILD)." in got.blocks.context
            assert "Export invoices as CSV" in got.blocks.context
            assert f"DEV (plan:PL-9:DEV): {dev.winner_id} won" in got.blocks.context
            assert "sub:PL-9:DEV:1" in got.context_text  # the story's other deliberations too
            assert "story moved DESIGN -> BUILD" in got.blocks.history
            assert got.version_hash == hashlib.sha256(got.context_text.encode()).hexdigest()
            assert got.token_count == -(-len(got.context_text) // 4) <= 2000
            narrow = await c.stub.GetTaskContext(
                pb.GetTaskContextRequest(
                    story_id="US-9",
                    role="DEV",
                    options=pb.ContextOptions(
                        include_timeline=True, include_decisions=False, max_events=1
                    ),
                )
            )
            assert "Decisions" not in narrow.context_text
            assert len(narrow.blocks.history.splitlines()) == 1
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await c.stub.GetTaskContext(
                    pb.GetTaskContextRequest(
                        story_id="US-9", options=pb.ContextOptions(scopes=["gossip"])
                    )
                )
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "options.scopes" in (err.value.details() or "")


async def test_an_api_replica_derives_through_the_process_that_runs_the_agents(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    """``fleet up --components api`` (as ``deploy/`` runs the API, and as ``FLEET_API_PROCESS=
    child`` runs a node's) has no agents: DeriveSubtasks asks the councils through the process
    that runs them, over NATS. With none running, it is UNAVAILABLE saying what to start, and
    records nothing; a retry once one runs derives for real."""
    script = {ASK: '["write the CSV writer", "add the download endpoint"]'}
    async with LoadGenServer("scripted", script=script) as lg:
        common = {
            "nats_url": nats_url,
            "stream": nats_stream,
            "cache_enabled": False,
            "vllm_url": lg.url,
            "vllm_model": "loadgen",
            "agent_runtime": "local",
            "plan_consumer": False,
        }
        replica = Settings(
            data_dir=tmp_path / "api",
            grpc_port=free_port(),
            components=frozenset({"api"}),
            **common,  # type: ignore[arg-type]
        )
        agents = Settings(
            data_dir=tmp_path / "agents",
            components=frozenset({"dispatcher", "projectors"}),
            **common,  # type: ignore[arg-type]
        )
        async with FleetNode(agents) as backend:
            api = FleetNode(replica)
            await api.start()
            try:
                async with FleetClient(api.endpoints.grpc) as c:
                    await c.stub.ProcessPlanningEvent(
                        pb.PlanningEventRequest(
                            event_type="PLAN_APPROVED",
                            plan_id="PL-7",
                            case_id="US-7",
                            metadata={"roles": "DEV", "description": "Export invoices"},
                        )
                    )
                    req = pb.DeriveSubtasksRequest(case_id="US-7", plan_id="PL-7")
                    derived = await c.stub.DeriveSubtasks(req)
                    assert [t.description for t in derived.tasks] == [
                        "write the CSV writer",
                        "add the download endpoint",
                    ]
                    assert api.runtime is None and backend.runtime is not None
                    assert any(ASK in str(r["messages"]) for r in lg.requests)

                    await backend.close()  # nothing runs the agents now
                    other = pb.DeriveSubtasksRequest(
                        case_id="US-7",
                        plan_id="PL-7",
                        strategy=pb.DerivationStrategy(max_tasks_per_role=1),
                    )
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await c.stub.DeriveSubtasks(other)
                    assert err.value.code() is grpc.StatusCode.UNAVAILABLE
                    details = err.value.details() or ""
                    assert "no Fleet process runs agents" in details, details
                    assert "fleet up --components dispatcher" in details
            finally:
                await api.close()
