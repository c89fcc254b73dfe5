"""The seed's Orchestrate, GetStatus, GetMetrics and DeliberateForBacklogReview on a whole node
(real NATS JetStream, the agents' real client against the load generator, whose architect answer
the test scripts): the architect's choice wins and GetDeliberationResult agrees; a failing
architect falls back to the highest score, recorded with why; status and metrics count what ran;
a seed client decodes GetStatus with the seed's own message definitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from agent_runtime.api import Candidate
from agent_runtime.member.architect import ARCHITECT_ASK
from agent_runtime.member.reviews import label_candidates
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.integration.fleet._cli import fleet
from tests.support.deliberations import FIB_TASK
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)


def seed_status_response() -> type:
    """GetStatusResponse as the seed's proto declares it (field numbers from the seed contract),
    built without Fleet's generated code: what a seed client decodes with."""
    f = descriptor_pb2.FileDescriptorProto(name="seed_status.proto", package="seed.v1")
    T = descriptor_pb2.FieldDescriptorProto
    stats = f.message_type.add(name="OrchestratorStats")
    entry = stats.nested_type.add(name="RoleCountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL)
    for name, number, kind in (
        ("total_deliberations", 1, T.TYPE_INT64),
        ("total_orchestrations", 2, T.TYPE_INT64),
        ("avg_deliberation_time_ms", 3, T.TYPE_DOUBLE),
        ("active_councils", 4, T.TYPE_INT32),
    ):
        stats.field.add(name=name, number=number, type=kind, label=T.LABEL_OPTIONAL)
    stats.field.add(
        name="role_counts",
        number=5,
        type=T.TYPE_MESSAGE,
        label=T.LABEL_REPEATED,
        type_name=".seed.v1.OrchestratorStats.RoleCountsEntry",
    )
    resp = f.message_type.add(name="GetStatusResponse")
    resp.field.add(name="status", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    resp.field.add(name="uptime_seconds", number=2, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL)
    resp.field.add(
        name="stats",
        number=3,
        type=T.TYPE_MESSAGE,
        label=T.LABEL_OPTIONAL,
        type_name=".seed.v1.OrchestratorStats",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("seed.v1.GetStatusResponse"))


def orchestrate(task_id: str, k: int) -> pb.OrchestrateRequest:
    return pb.OrchestrateRequest(
        task_id=task_id,
        task_description=FIB_TASK,
        role="DEV",
        story_id="US-7",
        case_id="CASE-7",
        options=pb.OrchestratorOptions(
            enable_peer_review=True,
            deliberation_rounds=1,
            enable_architect_selection=True,
            custom_params={"architect_k": str(k)},
        ),
    )


async def test_orchestrate_status_metrics_and_backlog_review(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    script = {ARCHITECT_ASK: '{"winner": "B", "rationale": "B is the clearest and correct"}'}
    async with LoadGenServer("scripted", script=script) as lg:
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
            # The architect (scripted) chooses candidate B of the top 2; its choice wins.
            got = await c.stub.Orchestrate(orchestrate("orch-1", 2))
            tags = dict(got.metadata.tags)
            assert tags["selection"] == "architect", tags
            assert tags["architect_rationale"] == "B is the clearest and correct"
            assert tags["architect_id"] == "agent-architect-001"
            assert len(got.candidates) == 2 and got.execution_id and got.duration_ms > 0
            labelled = label_candidates(
                got.execution_id,
                [Candidate(r.proposal.author_id, r.proposal.content) for r in got.candidates],
            )
            assert got.winner.proposal.author_id == labelled["B"].agent_id
            assert got.winner.rank == 1
            result = await c.stub.GetDeliberationResult(
                pb.GetDeliberationResultRequest(task_id="orch-1")
            )
            assert result.winner_id == got.winner.proposal.author_id
            architect_calls = [r for r in lg.requests if r.get("user") == "agent-architect-001"]
            assert len(architect_calls) == 1  # a real model call, made once

            # The architect's endpoint fails: the highest score wins, and the reason is recorded.
            lg.modes_by_user["agent-architect-001"] = "fail"
            fell = await c.stub.Orchestrate(orchestrate("orch-2", 3))
            tags = dict(fell.metadata.tags)
            assert tags["selection"] == "fallback" and "failed" in tags["fallback_reason"]
            assert fell.winner.proposal.author_id == fell.candidates[0].proposal.author_id
            assert fell.candidates[0].score >= fell.candidates[-1].score

            # A seed client decodes GetStatus with the seed's messages; the counts are what ran.
            raw = c.channel.unary_unary(
                "/fleet.orchestrator.v1.OrchestratorService/GetStatus",
                request_serializer=pb.GetStatusRequest.SerializeToString,
                response_deserializer=lambda b: b,
            )
            status = seed_status_response().FromString(
                await raw(pb.GetStatusRequest(include_stats=True))
            )
            assert status.status == "healthy" and status.uptime_seconds >= 0
            assert status.stats.total_orchestrations == 2
            assert status.stats.total_deliberations == 2
            assert dict(status.stats.role_counts) == {"DEV": 2}
            assert status.stats.active_councils == 5
            assert status.stats.avg_deliberation_time_ms > 0

            m = await c.stub.GetMetrics(pb.GetMetricsRequest(metric_type="all"))
            durations = [got.duration_ms, fell.duration_ms]
            assert m.performance.avg_orchestration_ms == pytest.approx(sum(durations) / 2, abs=1.0)
            assert m.performance.p99_latency_ms == pytest.approx(max(durations), abs=1.0)
            assert m.agents.total_agents == 15 and m.agents.agents_per_role["DEV"] == 3
            assert m.agents.active_agents == 3  # the three DEV agents answered
            listed = await c.stub.ListCouncils(pb.ListCouncilsRequest(role_filter="DEV"))
            dev = m.councils.health_per_council[listed.councils[0].council_id]
            assert dev.success_rate == 1.0 and dev.available_agents == 3 and dev.status == "active"
            only = await c.stub.GetMetrics(pb.GetMetricsRequest(metric_type="agents"))
            assert not only.HasField("performance") and only.HasField("agents")
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await c.stub.GetMetrics(pb.GetMetricsRequest(metric_type="speed"))
            assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "metric_type" in (bad.value.details() or "")

            # A client that goes away ends its own wait, not the orchestration.
            lg.delay_s = 0.3
            with pytest.raises(grpc.aio.AioRpcError) as gone:
                await c.stub.Orchestrate(orchestrate("orch-gone", 2), timeout=0.2)
            assert gone.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            lg.delay_s = 0.0

            async def completed() -> bool:
                r = await c.stub.GetDeliberationResult(
                    pb.GetDeliberationResultRequest(task_id="orch-gone")
                )
                return r.status == pb.DELIBERATION_STATUS_COMPLETED and bool(r.winner_id)

            await eventually(completed, timeout=30, what="the orchestration ends on its own")

            # The same from the command line, for people and (--json) for scripts.
            address = ("--address", node.endpoints.grpc)
            lg.modes_by_user.pop("agent-architect-001")
            out = await fleet("orchestrate", FIB_TASK, "--task-id", "orch-cli", *address)
            assert out.returncode == 0, out.stderr
            assert "chosen by agent-architect-001: B is the clearest and correct" in out.stdout
            out = await fleet("metrics", "--json", "--type", "performance", *address)
            assert out.returncode == 0, out.stderr
            assert set(json.loads(out.stdout)) == {"performance"}
            out = await fleet("context", "orch-cli", "--json", *address)
            assert out.returncode == 0, out.stderr
            assert json.loads(out.stdout)["blocks"]["system"].startswith("Role: DEV.")
            out = await fleet("orchestrate", "x", "--architect-k", "0", *address)
            assert out.returncode == 2 and "--architect-k" in out.stderr

            # The projections take the new events in their stride: rebuilt, they agree.
            await node.wait_projected()
            verified = await c.stub.VerifyProjections(pb.VerifyProjectionsRequest())
            assert verified.deliberations >= 2 and not list(verified.differences)

            # Backlog review: the role and story come from the task id; bad ids name task_id.
            ok = await c.stub.DeliberateForBacklogReview(
                pb.DeliberateRequest(
                    task_id="ceremony-C1:story-US-7:role-QA", task_description="Review US-7"
                )
            )
            assert ok.task_id == "ceremony-C1:story-US-7:role-QA"
            assert dict(ok.metadata.tags)["story_id"] == "US-7"
            for bad_id, field in (
                ("story-1:role-QA", "task_id"),
                ("ceremony-1:story-2:role-CHEF", "task_id"),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await c.stub.DeliberateForBacklogReview(
                        pb.DeliberateRequest(task_id=bad_id, task_description="x")
                    )
                assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
                assert field in (err.value.details() or "")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await c.stub.DeliberateForBacklogReview(
                    pb.DeliberateRequest(
                        task_id="ceremony-1:story-2:role-QA", role="DEV", task_description="x"
                    )
                )
            assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert "role" in (err.value.details() or "")
