"""The ten-task case: through gRPC, with acceptance tests, executed checks pick the right code.

Ten small tasks (``bench/selection/corpus/dev_core.py``), each answered by two DEV agents: one
right, one subtly wrong, both compiling and lint clean, so that only running them tells them
apart. The load generator's ``scripted`` mode gives each agent its candidate (keyed by the
agent's persona and the task), and every task runs twice with the candidates swapped between
the agents: the right one must win all twenty deliberations, whoever wrote it. Before the
sandbox, these scored a tie every time and the winner was a coin flip.

The node is real (nats-server, Valkey, LadybugDB, Ray actors running the sandbox).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from agent_runtime.member.prompts import DEFAULT_PERSONAS
from bench.selection.corpus.dev_core import TASKS
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)

AGENTS = ("agent-dev-001", "agent-dev-002")


def _task(name: str, swapped: bool) -> str:
    """The task text, made unique per ordering so each deliberation has a script of its own."""
    [t] = [t for t in TASKS if t.name == name]
    return f"{t.task} (order {'b' if swapped else 'a'})"


def _script() -> dict[str, str]:
    """Persona of agent i + the task → that agent's candidate (right for agent 1 in order a)."""
    script: dict[str, str] = {}
    for t in TASKS:
        for swapped in (False, True):
            for i, _agent in enumerate(AGENTS):
                right = (i == 0) != swapped
                key = f"{DEFAULT_PERSONAS[i]}\n\nTask: {_task(t.name, swapped)}"
                script[key] = t.answer(right=right)
    return script


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def client(
    tmp_path_factory: pytest.TempPathFactory, ray_session: None
) -> AsyncIterator[FleetClient]:
    async with LoadGenServer("scripted", script=_script()) as endpoint:
        settings = Settings(
            data_dir=tmp_path_factory.mktemp("checks"),
            grpc_port=free_port(),
            vllm_url=endpoint.url,
            vllm_model="loadgen",
            sandbox="bwrap",  # the case is about executed checks: refuse to run without them
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            yield c


async def test_the_right_candidate_wins_every_task_whoever_wrote_it(client: FleetClient) -> None:
    async def one(name: str, swapped: bool) -> tuple[str, str, pb.GetDeliberationResultResponse]:
        [t] = [t for t in TASKS if t.name == name]
        task_id = f"pick-{name}-{'b' if swapped else 'a'}"
        await client.deliberate(
            _task(name, swapped),
            role="DEV",
            num_agents=2,
            rounds=1,
            task_id=task_id,
            acceptance_tests=t.acceptance,
        )
        done = await client.wait(task_id, timeout=120)
        return name, AGENTS[1 if swapped else 0], done

    runs = await asyncio.gather(*(one(t.name, s) for t in TASKS for s in (False, True)))
    wrong = [
        f"{name}: {done.winner_id} won, {right} was right"
        for name, right, done in runs
        if done.winner_id != right
    ]
    assert wrong == []
    for _name, right, done in runs:
        assert done.status == pb.DELIBERATION_STATUS_COMPLETED
        by_agent = {r.proposal.author_id: r for r in done.results}
        winner, loser = by_agent[right], next(r for a, r in by_agent.items() if a != right)
        # The DryRunResult is the real run: the acceptance tests passed in the sandbox.
        assert winner.checks.dryrun.passed and winner.checks.dryrun.exit_code == 0
        assert winner.checks.dryrun.message.startswith("acceptance ")
        assert not loser.checks.dryrun.passed and "failed" in loser.checks.dryrun.message
        assert winner.score > 0.5 > loser.score  # the acceptance tests gate


async def test_the_pass_matrix_is_in_the_result_and_the_graph(client: FleetClient) -> None:
    t = TASKS[0]
    await client.deliberate(
        _task(t.name, False), role="DEV", num_agents=2, rounds=1, task_id="pick-matrix"
    )  # no acceptance tests: the agents' own tests still run against each other
    done = await client.wait("pick-matrix", timeout=120)
    rows = {
        r.proposal.author_id: {c.check_type: c for c in r.checks.additional_checks}["cross_exec"]
        for r in done.results
    }
    assert rows["agent-dev-001"].details["tests:agent-dev-002"] == "1/1"  # right passes wrong's
    # The wrong fib passes fib(10) == 55 but not fib(0) == 0:
    assert rows["agent-dev-002"].details["tests:agent-dev-001"] == "1/2"
    assert done.winner_id == "agent-dev-001"

    async def graph_has_matrix() -> bool:
        _, found, _ = await client.query(
            "MATCH (d:Deliberation {task_id: $id})-[:HAS_PROPOSAL]->(p:Proposal) "
            "WHERE p.checks IS NOT NULL RETURN p.agent_id AS agent, p.checks AS checks",
            {"id": "pick-matrix"},
        )
        return len(found) == 2 and all("tests:agent-dev-" in str(r["checks"]) for r in found)

    assert await eventually(graph_has_matrix, timeout=30, what="the matrix in the graph")


async def test_acceptance_tests_that_do_not_compile_are_refused_naming_the_field(
    client: FleetClient,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.deliberate("write fib", acceptance_tests="def test_x(:\n    pass\n")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (e.value.details() or "").startswith("constraints.metadata.acceptance_tests")
