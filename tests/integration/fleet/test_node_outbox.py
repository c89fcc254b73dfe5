"""The outbox in a whole node, through the commands operators use: ``fleet projections status``
lists it at the stream head, ``fleet verify`` checks its messages (and the graph's stories) and
finds them all once, and ``fleet projections rebuild outbox`` publishes nothing again; a story
transition and a plan approved for it show as a Story node with its links. On the node's own
embedded nats-server (the outbox's stream holds ``orchestration.>``, which a shared server gives
to one stream only)."""

from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from tests.integration.fleet._cli import fleet
from tests.support.outbox import read_all
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)

STORY_MOVED = {"story_id": "story-o", "from_phase": "DESIGN", "to_phase": "BUILD"}
STORY_LINKS = """
MATCH (s:Story {id: 'story-o'})-[r]->(x)
RETURN label(r) AS link, s.phase AS phase
"""


async def _publish_when_consumed(
    url: str, subject: str, body: dict[str, str], durable: str = "fleet-stories"
) -> None:
    """Publish once the node's consumer of ``subject`` exists (it makes the stream, then its
    durable at the stream's tail, in the background)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        stream = await eventually(
            lambda: js.find_stream_name_by_subject(subject),
            timeout=20,
            ignoring=(nats.js.errors.NotFoundError,),
        )
        await eventually(
            lambda: js.consumer_info(stream, durable),
            timeout=20,
            ignoring=(nats.js.errors.NotFoundError,),
        )
        await js.publish(subject, json.dumps(body).encode())
    finally:
        await nc.close()


async def test_status_verify_and_rebuild_cover_the_outbox(tmp_path: Path) -> None:
    async with LoadGenServer("instant") as lg:
        settings = Settings(
            data_dir=tmp_path / "node",
            grpc_port=free_port(),
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_runtime="local",
            cache_enabled=False,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            addr = ("--address", client.address)
            url = node.endpoints.nats_url
            await _publish_when_consumed(url, "planning.story.transitioned", STORY_MOVED)
            out = await fleet(
                "approve-plan", "plan-o", "--story", "story-o", "--role", "DEV", *addr
            )
            assert out.returncode == 0, out.stderr
            done = await client.wait("plan:plan-o:DEV", timeout=60)
            assert done.winner_id

            async def story_graphed() -> list[dict[str, object]]:
                _, rows, _ = await client.query(STORY_LINKS)
                return rows if len(rows) == 3 else []

            rows = await eventually(story_graphed, timeout=30, what="the story in the graph")
            assert sorted(str(r["link"]) for r in rows) == [
                "CHANGED_PHASE", "HAS_DELIBERATION", "HAS_PLAN"
            ]  # fmt: skip
            assert {r["phase"] for r in rows} == {"BUILD"}
            head = node.projections.head() if node.projections else 0

            async def outbox_at_head() -> bool:
                out = await fleet("projections", "status", "--json", *addr)
                rows = {p["name"]: p for p in json.loads(out.stdout)["projections"]}
                return rows.get("outbox", {}).get("position") == head

            await eventually(outbox_at_head, timeout=30, what="the outbox at the stream head")
            out = await fleet("verify", "--json", *addr)
            assert out.returncode == 0, out.stdout + out.stderr
            report = json.loads(out.stdout)
            assert report["differences"] == [] and "outbox" in report["positions"]
            out = await fleet("projections", "rebuild", "outbox", *addr)
            assert out.returncode == 0, out.stderr
            await eventually(outbox_at_head, timeout=30, what="the rebuilt outbox at the head")
            got = await read_all(node.endpoints.nats_url, at_least=3)
    # The story's change and the plan's approval came from two sources: either may be first.
    assert sorted(r.subject for r in got[:2]) == [
        "orchestration.phase.changed",
        "orchestration.plan.approved",
    ]
    assert [r.subject for r in got[2:]] == [
        "orchestration.task.dispatched",
        "orchestration.deliberation.completed",
        "orchestration.task.completed",
    ]
