"""StreamDeliberation, ListDeliberations, CancelDeliberation, metrics and an API-only replica, on a
real node (nats-server, Valkey, LadybugDB, Ray). The LLM endpoint is the load generator with a
small delay, so a deliberation takes long enough to be watched while it runs; these tests are
about the API, not about answers.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
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
from tests.integration.fleet._cli import fleet as _fleet
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)


@dataclass
class Api:
    node: FleetNode
    client: FleetClient
    settings: Settings


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def api(tmp_path_factory: pytest.TempPathFactory, ray_session: None) -> AsyncIterator[Api]:
    async with LoadGenServer("instant", delay_s=0.2) as endpoint:
        settings = Settings(
            data_dir=tmp_path_factory.mktemp("stream"),
            grpc_port=free_port(),
            vllm_url=endpoint.url,
            vllm_model="loadgen",
            metrics_port=free_port(),
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            yield Api(node, c, settings)


def _request(task_id: str, task: str = "write fib", **kw: object) -> pb.DeliberateRequest:
    fields: dict[str, object] = {"role": "DEV", "num_agents": 3, "rounds": 1, **kw}
    return pb.DeliberateRequest(task_id=task_id, task_description=task, **fields)  # type: ignore[arg-type]


async def _updates(client: FleetClient, task_id: str, **kw: object) -> list[pb.DeliberationUpdate]:
    req = _request(task_id, **kw) if kw.pop("start", False) else None  # type: ignore[arg-type]
    return [u async for u in client.stream(task_id, req)]


def _keys(updates: list[pb.DeliberationUpdate]) -> list[tuple[str, str, str]]:
    return [(u.status, u.current_step.split(":")[0], u.current_agent) for u in updates]


async def test_stream_starts_a_new_deliberation_and_ends_complete(api: Api) -> None:
    updates = await _updates(api.client, "stream-new", start=True)
    keys = _keys(updates)
    assert keys[0] == ("generating", "requested", "")
    assert {a for s, k, a in keys if k == "assigned"} == {f"agent-dev-{i:03d}" for i in (1, 2, 3)}
    proposed = [u for u in updates if u.current_step.startswith("proposed")]
    assert len(proposed) == 3 and all(u.partial_result.proposal.content for u in proposed)
    assert sum(1 for _, k, _ in keys if k == "scored") == 3
    last = updates[-1]
    assert last.status == "complete" and last.current_step.startswith("COMPLETED")
    assert last.progress_percent == 100
    percents = [u.progress_percent for u in updates]
    assert percents == sorted(percents), "progress never goes backwards"
    result = await api.client.wait("stream-new", timeout=10)
    assert last.current_agent == result.winner_id


async def _started(client: FleetClient, task_id: str) -> None:
    """Wait until a dispatcher has started the deliberation (it has history past its request)."""

    async def started() -> bool:
        return (await client.result(task_id)).status != pb.DELIBERATION_STATUS_PENDING

    await eventually(started, interval=0.01, what=f"{task_id} never started")


async def test_a_resumed_stream_replays_exactly_what_a_live_one_saw(api: Api) -> None:
    done = await api.client.deliberate("write fib", task_id="stream-midway")
    assert done.status == pb.DELIBERATION_STATUS_PENDING
    await _started(api.client, "stream-midway")  # join while it runs: part history, part live
    live = await _updates(api.client, "stream-midway")
    replayed = await _updates(api.client, "stream-midway")
    assert live == replayed, "no gap and no duplicate where history meets the live feed"
    assert live[-1].current_step.startswith("COMPLETED")


async def test_many_streams_share_one_feed(api: Api) -> None:
    await api.client.deliberate("write fib", task_id="stream-many")
    hub = api.node.hub
    assert hub is not None
    streams = [asyncio.create_task(_updates(api.client, "stream-many")) for _ in range(6)]
    results = await asyncio.gather(*streams)
    assert all(r == results[0] for r in results)
    assert hub.watchers == 0, "every watcher unsubscribed at its end"


@pytest.mark.parametrize(
    ("request_", "code", "field"),
    [
        (pb.DeliberateRequest(task_id="never-requested"), grpc.StatusCode.NOT_FOUND, ""),
        (pb.DeliberateRequest(task_id="bad id!"), grpc.StatusCode.INVALID_ARGUMENT, "task_id"),
        (_request("stream-bad", rounds=9), grpc.StatusCode.INVALID_ARGUMENT, "rounds"),
    ],
)
async def test_stream_errors(
    api: Api, request_: pb.DeliberateRequest, code: grpc.StatusCode, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        [u async for u in api.client.stream(request_.task_id, request_)]
    assert e.value.code() == code
    assert (e.value.details() or "").startswith(field)


async def test_list_filters_pages_newest_first_and_validates(api: Api) -> None:
    since = int(time.time() * 1000)
    for i, role in enumerate(["QA", "DATA", "QA"]):
        await api.client.deliberate("write fib", task_id=f"list-{i}", role=role, num_agents=1)
        await asyncio.sleep(0.01)
    for i in range(3):
        await api.client.wait(f"list-{i}", timeout=30)
    await api.node.wait_projected()
    qa = await api.client.list(role="qa", created_after_ms=since)
    assert [d.task_id for d in qa.deliberations] == ["list-2", "list-0"]
    assert all(d.status == pb.DELIBERATION_STATUS_COMPLETED for d in qa.deliberations)
    seen, token = [], ""
    while True:
        page = await api.client.list(created_after_ms=since, page_size=1, page_token=token)
        seen += [d.task_id for d in page.deliberations]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["list-2", "list-1", "list-0"]
    first = await api.client.list(created_after_ms=since, page_size=1)
    assert first.deliberations[0].winner_id and first.deliberations[0].created_at_ms >= since
    for kw, field in [
        ({"role": "CHEF"}, "role"),
        ({"page_size": 501}, "page_size"),
        ({"page_token": "garbage"}, "page_token"),
        ({"page_token": first.next_page_token, "role": "QA"}, "page_token"),
        ({"plan_id": "no spaces allowed"}, "plan_id"),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            args: dict[str, object] = {"created_after_ms": since, "page_size": 1, **kw}
            await api.client.list(**args)  # type: ignore[arg-type]
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (e.value.details() or "").startswith(field), e.value.details()


async def test_cancel_ends_an_open_deliberation_once(api: Api) -> None:
    await api.client.deliberate("loadgen:hang write fib", task_id="cancel-me", timeout_seconds=5)
    watch = asyncio.create_task(_updates(api.client, "cancel-me"))
    await _started(api.client, "cancel-me")
    resp = await api.client.cancel("cancel-me", "changed my mind")
    assert resp.status == pb.DELIBERATION_STATUS_CANCELLED
    updates = await asyncio.wait_for(watch, 10)
    assert updates[-1].current_step == "CANCELLED: changed my mind"
    result = await api.client.wait("cancel-me", timeout=10)
    assert result.status == pb.DELIBERATION_STATUS_CANCELLED
    for task, code in [
        ("cancel-me", grpc.StatusCode.FAILED_PRECONDITION),
        ("never-requested", grpc.StatusCode.NOT_FOUND),
        ("bad id!", grpc.StatusCode.INVALID_ARGUMENT),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await api.client.cancel(task)
        assert e.value.code() == code


async def test_cli_watch_list_and_cancel(api: Api) -> None:
    addr = ("--address", api.client.address)
    await api.client.deliberate("write fib", task_id="cli-watch")
    out = await _fleet("watch", "cli-watch", "--json", *addr)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["current_step"].startswith("requested")
    assert lines[-2]["status"] == "complete"
    assert lines[-1]["status"] == "DELIBERATION_STATUS_COMPLETED"
    out = await _fleet("watch", "cli-watch", *addr)  # for people: the live view, then the result
    assert out.returncode == 0 and "COMPLETED" in out.stdout, out.stderr
    await api.node.wait_projected()
    out = await _fleet("list", "--json", "--limit", "500", *addr)
    assert out.returncode == 0, out.stderr
    assert "cli-watch" in {d["task_id"] for d in json.loads(out.stdout)["deliberations"]}
    out = await _fleet("list", "--since", "yesterday", *addr)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    out = await _fleet("cancel", "cli-watch", *addr)
    assert out.returncode == 1 and "FAILED_PRECONDITION" in out.stderr
    out = await _fleet("cancel", "bad id!", *addr)
    assert out.returncode == 2 and "task_id" in out.stderr


async def test_metrics_are_derived_from_the_stream(api: Api) -> None:
    await api.client.deliberate("write fib", task_id="metrics-1")
    await api.client.wait("metrics-1", timeout=30)
    await api.node.wait_projected()

    def scrape() -> str:
        with urllib.request.urlopen(api.node.endpoints.metrics, timeout=5) as r:
            return str(r.read().decode())

    async def counted() -> str:  # the metrics follower trails the stream by a moment
        text = await asyncio.to_thread(scrape)
        return text if 'fleet_deliberations_total{status="COMPLETED"}' in text else ""

    text = await eventually(counted, timeout=5.0, interval=0.1, what="no COMPLETED count")
    assert 'fleet_deliberations_total{status="COMPLETED"}' in text
    assert 'fleet_agent_call_seconds_count{model="loadgen"}' in text
    assert 'fleet_agent_tokens_total{kind="completion",model="loadgen"}' in text
    assert 'fleet_store_write_seconds_count{op="update"}' in text
    assert 'fleet_store_write_seconds_count{op="update_in_order"}' in text  # scores, Completed
    assert 'fleet_projection_lag_events{projection="' in text
    assert "fleet_dispatcher_active_deliberations" in text and "fleet_stream_head" in text


async def test_an_api_only_replica_serves_while_another_process_dispatches(
    api: Api, tmp_path_factory: pytest.TempPathFactory
) -> None:
    e = api.node.endpoints
    settings = replace(
        api.settings,
        data_dir=tmp_path_factory.mktemp("replica"),
        grpc_port=free_port(),
        metrics_port=0,
        nats_url=e.nats_url,
        valkey_url=e.valkey_url or None,
        components=frozenset({"api"}),
    )
    async with FleetNode(settings) as replica, FleetClient(replica.endpoints.grpc) as c:
        assert "dispatcher" not in replica.servers and replica.runners == []
        assert "llm" not in replica.servers
        updates = [u async for u in c.stream("replica-1", _request("replica-1"))]
        assert updates[-1].current_step.startswith("COMPLETED")
        assert (await c.wait("replica-1", timeout=10)).status == pb.DELIBERATION_STATUS_COMPLETED


async def test_a_deliberation_is_one_trace_from_the_rpc_to_every_agent_call(
    api: Api, spans: Any
) -> None:
    """The dispatcher reacts to the Requested event, not to the call (in production often in
    another process): the call's traceparent travels in the event, and the dispatcher's store
    writes and agent calls are children of the Deliberate span, in its trace."""
    from aggregates import deliberation_id

    await api.client.deliberate("write fib", task_id="traced-1")
    await api.client.wait("traced-1", timeout=30)
    d_id = str(deliberation_id("traced-1"))
    mine = [
        s
        for s in spans.get_finished_spans()
        if (s.attributes or {}).get("fleet.deliberation_id") == d_id
    ]
    names = {s.name for s in mine}
    assert {"rpc Deliberate", "store create", "store update", "agent run_turn"} <= names
    assert {"agent review", "agent assess", "store update_in_order"} <= names
    (rpc,) = [s for s in mine if s.name == "rpc Deliberate"]
    story = [(s.name, f"{s.context.trace_id:x}"[:8]) for s in mine]
    assert {s.context.trace_id for s in mine if s.name != "rpc GetDeliberationResult"} == {
        rpc.context.trace_id
    }, story
    by_id = {s.context.span_id: s for s in mine}
    for s in mine:
        if s.name.startswith(("agent ", "store update")):  # update_in_order too
            assert s.parent is not None and by_id[s.parent.span_id] is rpc, s.name
