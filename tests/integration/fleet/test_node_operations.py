"""What operators and scripts rely on, on a whole node (nats-server, Valkey, LadybugDB, the
dispatcher with in-process councils): work in flight in GetNodeStatus, `fleet deliberate --wait`'s
live view, `fleet approve-plan`, list filters, results that name the agents that failed, and
history at a version.

The LLM endpoint is the load generator (a short delay, so a deliberation can be watched while it
runs; ``agent-qa-002`` always gets HTTP 500): these tests are about the API and the CLI, not about
answers.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
import pytest_asyncio

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.integration.fleet._cli import fleet
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)
FAILING = "agent-qa-002"


@dataclass
class Ops:
    node: FleetNode
    client: FleetClient

    @property
    def addr(self) -> tuple[str, str]:
        return ("--address", self.client.address)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def ops(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Ops]:
    async with LoadGenServer("instant", delay_s=0.3, modes_by_user={FAILING: "fail"}) as lg:
        settings = Settings(
            data_dir=tmp_path_factory.mktemp("ops"),
            grpc_port=free_port(),
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_runtime="local",
            plan_consumer=False,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            yield Ops(node, c)


async def _becomes(read: Callable[[], Awaitable[Any]], want: Any, timeout: float = 10.0) -> None:
    got: list[Any] = [None]

    async def reached() -> bool:
        got[0] = await read()
        return bool(got[0] == want)

    what = lambda: f"still {got[0]!r}, expected {want!r}"  # noqa: E731
    await eventually(reached, timeout=timeout, interval=0.05, what=what)


async def test_get_status_counts_the_deliberations_in_flight(ops: Ops) -> None:
    """Open deliberations, system-wide (PENDING or IN_PROGRESS): what an operator asks "how much
    is running" means, the same from every replica, and back to 0 when they end."""

    async def in_flight() -> int:
        status = await ops.client.stub.GetNodeStatus(pb.GetNodeStatusRequest())
        return int(status.deliberations_in_flight)

    assert await in_flight() == 0
    for task in ("hang-1", "hang-2"):  # every agent call hangs: they stay in flight
        await ops.client.deliberate("loadgen:hang write fib", task_id=task, timeout_seconds=60)
    await _becomes(in_flight, 2)
    await ops.client.cancel("hang-1")
    await _becomes(in_flight, 1)
    await ops.client.cancel("hang-2")
    await _becomes(in_flight, 0)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


async def test_deliberate_wait_shows_each_agent_live_then_the_result(ops: Ops) -> None:
    """On a terminal the view is redrawn as events land: rows an agent passes through (proposed)
    appear in frames before the last one, not only the final state."""
    tty = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "COLUMNS": "160", "NO_COLOR": "1"}
    out = await fleet(
        "deliberate", "write fib", "--task-id", "live-1", "--wait", *ops.addr, env=tty
    )
    assert out.returncode == 0, out.stderr
    screen = _ANSI.sub("", out.stdout)
    for i in (1, 2, 3):  # each agent's row as it moves: proposed while peers rate, then scored
        assert re.search(rf"^agent-dev-{i:03d}\s+proposed\s+round 1/1, \d+ tokens", screen, re.M)
        assert re.search(rf"^agent-dev-{i:03d}\s+(scored|winner)\s+\d\.\d\d \(", screen, re.M)
    assert re.search(r"^task live-1\s+generating\s+\S+\s+80%", screen, re.M), screen  # the head
    assert re.search(r"^task live-1\s+complete\s+\S+\s+100%", screen, re.M)
    assert re.search(r"^proposed: round 1/1, \d+ tokens", screen, re.M)  # the step line
    assert re.search(r"^COMPLETED: winner agent-dev-\d{3}$", screen, re.M)
    winner = (await ops.client.result("live-1")).winner_id
    assert f"status COMPLETED  winner {winner}" in screen  # then the result, for people


async def test_approve_plan_from_the_cli(ops: Ops) -> None:
    plan = (
        "approve-plan", "PL-CLI", "--story", "US-7", "--role", "DEV", "--role", "qa",
        "--description", "Export invoices as CSV", "--task", "CSV writer", "--approved-by", "po",
    )  # fmt: skip
    out = await fleet(*plan, "--json", *ops.addr)
    assert out.returncode == 0, out.stderr
    tasks = ["plan:PL-CLI:DEV", "plan:PL-CLI:QA"]
    assert json.loads(out.stdout) == {"plan_id": "PL-CLI", "task_ids": tasks, "created": True}
    again = await fleet(*plan, *ops.addr)  # idempotent, and readable
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "plan PL-CLI already approved; deliberations:",
        *(f"  {t}" for t in tasks),
    ]
    for t in tasks:
        done = await ops.client.wait(t, timeout=60)
        assert done.status == pb.DELIBERATION_STATUS_COMPLETED, done.error_message
    history = await ops.client.history("plan:PL-CLI:DEV")
    requested = json.loads(history.events[0].data_json)
    assert "Export invoices as CSV" in requested["task"] and requested["plan_id"] == "PL-CLI"
    for bad, field in [
        (("PL-BAD", "--role", "CHEF"), "role"),
        (("PL-BAD", "--story", " "), "story_id"),
        (("has space",), "plan_id"),  # its task ids would be unreadable
    ]:
        out = await fleet("approve-plan", "--story", "US-7", *bad, *ops.addr)
        assert out.returncode == 2, (bad, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and field in out.stderr, out.stderr


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


async def test_list_filters_by_status_plan_and_created_before(ops: Ops) -> None:
    since = int(time.time() * 1000)
    await ops.client.deliberate("write fib", task_id="flt-done", num_agents=1)
    await asyncio.sleep(0.01)
    mid = int(time.time() * 1000)
    await ops.client.deliberate("loadgen:hang write fib", task_id="flt-cancelled", num_agents=1)
    await ops.client.cancel("flt-cancelled", "not needed")
    await ops.client.stub.ApprovePlan(
        pb.ApprovePlanRequest(plan_id="PL-LIST", story_id="US-8", roles=["DEV"])
    )
    for t in ("flt-done", "flt-cancelled", "plan:PL-LIST:DEV"):
        await ops.client.wait(t, timeout=60)
    await ops.node.wait_projected()

    async def ids(**kw: Any) -> list[str]:
        page = await ops.client.list(created_after_ms=since, **kw)
        return [d.task_id for d in page.deliberations]

    assert await ids(status="CANCELLED") == ["flt-cancelled"]
    assert await ids(status="COMPLETED") == ["plan:PL-LIST:DEV", "flt-done"]
    assert await ids(plan_id="PL-LIST") == ["plan:PL-LIST:DEV"]
    assert await ids(created_before_ms=mid) == ["flt-done"]
    assert await ids(status="CANCELLED", created_before_ms=mid) == []
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await ids(created_before_ms=since - 1)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (e.value.details() or "").startswith("created_before_ms")

    async def cli(*flags: str) -> list[str]:
        out = await fleet("list", "--since", _iso(since), *flags, "--json", *ops.addr)
        assert out.returncode == 0, out.stderr
        return [d["task_id"] for d in json.loads(out.stdout)["deliberations"]]

    assert await cli("--status", "cancelled") == ["flt-cancelled"]
    assert await cli("--plan", "PL-LIST") == ["plan:PL-LIST:DEV"]
    assert await cli("--until", _iso(mid)) == ["flt-done"]
    out = await fleet("list", "--plan", "PL-LIST", *ops.addr, env={"COLUMNS": "200"})
    assert out.returncode == 0 and "plan:PL-LIST:DEV" in out.stdout and "COMPLETED" in out.stdout
    assert "flt-done" not in out.stdout


async def test_a_council_that_lost_an_agent_says_who_and_why(ops: Ops) -> None:
    """Issue 5: some agents fail, the deliberation completes with the rest and says so."""
    await ops.client.deliberate("write a CSV parser", task_id="lost-one", role="QA")
    done = await ops.client.wait("lost-one", timeout=60)
    assert done.status == pb.DELIBERATION_STATUS_COMPLETED
    assert {r.proposal.author_id for r in done.results} == {"agent-qa-001", "agent-qa-003"}
    assert done.error_message.startswith(f"completed without {FAILING}: ")
    assert "500" in done.error_message
    tags = done.metadata.tags
    assert tags["failed_agents"] == FAILING
    assert (
        tags[f"agent_error.{FAILING}"].startswith("round 1: ")
        and "500" in tags[f"agent_error.{FAILING}"]
    )

    out = await fleet("result", "lost-one", "--json", *ops.addr)
    assert out.returncode == 0, out.stderr
    as_json = json.loads(out.stdout)
    assert as_json["error_message"] == done.error_message
    assert as_json["metadata"]["tags"]["failed_agents"] == FAILING
    out = await fleet("result", "lost-one", *ops.addr, env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    assert f"completed without {FAILING}: " in out.stdout
    assert "Failed agents" in out.stdout
    assert re.search(rf"{FAILING}\s+.\s+round 1: .*500", out.stdout), out.stdout

    clean = await ops.client.result("live-1")  # nobody failed: nothing to say
    assert clean.error_message == "" and "failed_agents" not in clean.metadata.tags


async def test_history_at_a_version_is_the_state_then(ops: Ops) -> None:
    await ops.client.deliberate("write fib", task_id="hist-1")
    final = await ops.client.wait("hist-1", timeout=60)
    whole = await ops.client.history("hist-1")
    types = [e.type for e in whole.events]
    assert types[0] == "Requested" and types[-1] == "Completed"
    assert [e.version for e in whole.events] == list(range(1, len(types) + 1))
    assert whole.status == pb.DELIBERATION_STATUS_COMPLETED
    assert whole.winner_id == final.winner_id

    proposed = max(e.version for e in whole.events if e.type == "ProposalReceived")
    then = await ops.client.history("hist-1", to_version=proposed)
    assert list(then.events) == list(whole.events[:proposed])
    assert then.status == pb.DELIBERATION_STATUS_IN_PROGRESS
    assert then.winner_id == ""
    assert sorted(r.proposal.author_id for r in then.results) == [
        f"agent-dev-{i:03d}" for i in (1, 2, 3)
    ]
    assert all(r.proposal.content and r.rank == 0 and r.score == 0 for r in then.results)

    first = await ops.client.history("hist-1", to_version=1)
    assert [e.type for e in first.events] == ["Requested"]
    assert first.status == pb.DELIBERATION_STATUS_PENDING and not first.results
    beyond = await ops.client.history("hist-1", to_version=len(types) + 10)
    assert list(beyond.events) == list(whole.events)

    for task, version, code, field in [
        ("never-requested", 0, grpc.StatusCode.NOT_FOUND, ""),
        ("bad id!", 0, grpc.StatusCode.INVALID_ARGUMENT, "task_id"),
        ("hist-1", -1, grpc.StatusCode.INVALID_ARGUMENT, "to_version"),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await ops.client.history(task, to_version=version)
        assert e.value.code() == code, (task, version)
        assert (e.value.details() or "").startswith(field)
