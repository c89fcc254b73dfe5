"""The gRPC API's contract on a real node: validation, idempotency, not-found, read-only Cypher.

The node is real (nats-server, Valkey, LadybugDB, Ray); its LLM endpoint is the load generator,
which answers at once: these tests are about the API, not about answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.integration.fleet._cli import fleet as _fleet

pytestmark = pytest.mark.timeout(120)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def client(
    tmp_path_factory: pytest.TempPathFactory, ray_session: None
) -> AsyncIterator[FleetClient]:
    async with LoadGenServer("instant") as endpoint:
        settings = Settings(
            data_dir=tmp_path_factory.mktemp("api"),
            grpc_port=free_port(),
            vllm_url=endpoint.url,
            vllm_model="loadgen",
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            yield c


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"role": "CHEF"}, "role"),
        ({"num_agents": 17}, "num_agents"),
        ({"num_agents": -1}, "num_agents"),
        ({"rounds": 6}, "rounds"),
        ({"task": ""}, "task_description"),
        ({"task": "x" * (64 * 1024 + 1)}, "task_description"),
        ({"task_id": "has spaces"}, "task_id"),
        ({"timeout_seconds": -5}, "constraints.timeout_seconds"),
    ],
)
async def test_bad_requests_are_invalid_argument_naming_the_field(
    client: FleetClient, change: dict[str, object], field: str
) -> None:
    args: dict[str, object] = {"task": "write fib", "role": "DEV", "num_agents": 3, "rounds": 1}
    args.update(change)
    task = str(args.pop("task"))
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.deliberate(task, **args)  # type: ignore[arg-type]
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (e.value.details() or "").startswith(field)


async def test_deliberate_is_idempotent_on_the_client_task_id(client: FleetClient) -> None:
    first = await client.deliberate("write fib", task_id="same-id")
    second = await client.deliberate("write fib", task_id="same-id")
    assert first.task_id == second.task_id == "same-id"
    done = await client.wait("same-id", timeout=30)
    assert done.status == pb.DELIBERATION_STATUS_COMPLETED
    history = await client.history("same-id")
    assert [e.type for e in history.events].count("Requested") == 1


async def test_unknown_task_is_not_found(client: FleetClient) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.result("never-requested")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    "cypher",
    [
        "CREATE (n:Deliberation {id: 'x'})",
        "MATCH (d:Deliberation) SET d.status = 'FAILED'",
        "MATCH (d:Deliberation) DETACH DELETE d",
        "MATCH (d:Deliberation) RETURN d // harmless?\n MERGE (x:Agent {id: 'y'})",
    ],
)
async def test_query_history_refuses_writes_and_changes_nothing(
    client: FleetClient, cypher: str
) -> None:
    count = "MATCH (d:Deliberation) RETURN count(d) AS n"
    touched = "MATCH (d:Deliberation) WHERE d.status = 'FAILED' OR d.id = 'x' RETURN count(d) AS n"
    _, before, _ = await client.query(count)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.query(cypher)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _, after, _ = await client.query(count)
    _, changed, _ = await client.query(touched)
    _, agents, _ = await client.query("MATCH (a:Agent {id: 'y'}) RETURN count(a) AS n")
    # Projections of earlier tests may still land (counts only grow); nothing was written by us.
    assert after[0]["n"] >= before[0]["n"] > 0
    assert changed == agents == [{"n": 0}]


async def test_a_bad_query_is_invalid_argument_with_the_engine_message(client: FleetClient) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.query("MATCH (x:NoSuchLabel) RETURN x")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "NoSuchLabel" in (e.value.details() or "")


async def test_health_and_reflection_are_served(client: FleetClient) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    async with grpc.aio.insecure_channel(client.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        r = await health.Check(
            health_pb2.HealthCheckRequest(service="fleet.orchestrator.v1.OrchestratorService")
        )
        assert r.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        responses = refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        names = [s.name async for resp in responses for s in resp.list_services_response.service]
    assert "fleet.orchestrator.v1.OrchestratorService" in names


async def test_cli_bad_input_is_one_clear_line_and_exit_2(client: FleetClient) -> None:
    out = await _fleet("deliberate", "write fib", "--role", "CHEF", "--address", client.address)
    assert out.returncode == 2
    assert "INVALID_ARGUMENT" in out.stderr and "role" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = await _fleet("query", "MATCH (d) DETACH DELETE d", "--address", client.address)
    assert out.returncode == 2 and "read-only" in out.stderr


async def test_cli_unknown_task_exits_1(client: FleetClient) -> None:
    out = await _fleet("result", "no-such-task", "--address", client.address)
    assert out.returncode == 1
    assert "NOT_FOUND" in out.stderr


async def test_cli_deliberate_wait_json_and_query(client: FleetClient) -> None:
    out = await _fleet(
        "deliberate", "write fib", "--task-id", "cli-1", "--wait", "--json",
        "--address", client.address,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "DELIBERATION_STATUS_COMPLETED"
    assert len(result["results"]) == 3
    out = await _fleet(
        "query", "MATCH (d:Deliberation {task_id: $t}) RETURN d.status AS s",
        "--param", "t=cli-1", "--json", "--address", client.address,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rows"] in ([{"s": "COMPLETED"}], [{"s": "IN_PROGRESS"}])
