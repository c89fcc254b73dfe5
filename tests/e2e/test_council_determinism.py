"""Same council seeds on a deterministic endpoint, same ranking; and the diversity on record.

Each run is a whole Fleet node (gRPC API, the dispatcher following JetStream, the council's
members in process) on the session's nats-server with a stream of its own, so nothing carries
over between runs but the configuration. The endpoint is the load generator in ``judge`` mode: a
proposal is a hash of (seed, agent, prompt) and a peer rating a hash of (seed, reviewer,
proposal). It is deterministic, and it is no model: the rankings mean nothing about quality, only
that Fleet's path from seeds to a ranking adds no chance of its own (agent order, scheduling,
labels, wall-clock time).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aggregates import deliberation_id
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._node import loadgen_node_settings
from tests.e2e._stream import stored_events

pytestmark = pytest.mark.timeout(120)

TASK = "Write a Python function that returns the n-th Fibonacci number"
COUNCIL = (
    {"seed": 11, "temperature": 0.2, "persona": "You prefer the simplest design that works."},
    {"seed": 22, "temperature": 0.6, "persona": "You care most about edge cases."},
    {"seed": 33, "temperature": 0.9, "persona": "You look for the risk others miss."},
)
OTHER_SEEDS = (5, 6, 7)

Ranking = list[tuple[int, str, float, str]]
"""(rank, agent, score, content) per result, best first."""


async def deliberate(
    tmp: Path, nats_url: str, endpoint: LoadGenServer, council: tuple[dict[str, object], ...]
) -> tuple[Ranking, str, Settings]:
    """One deliberation (DEV, 3 agents, 1 round, peer ratings) on a fresh node; its ranking."""
    councils = json.dumps({"DEV": {"agents": list(council)}})
    settings = loadgen_node_settings(tmp, nats_url, endpoint.url, councils=councils)
    async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
        await client.deliberate(TASK, role="DEV", num_agents=3, rounds=1, task_id="det")
        final = await client.wait("det", timeout=30)
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message
    ranking = sorted(
        (r.rank, r.proposal.author_id, round(r.score, 6), r.proposal.content) for r in final.results
    )
    return ranking, final.winner_id, settings


async def test_same_seeds_same_ranking_and_other_seeds_another(
    tmp_path: Path, nats_url: str
) -> None:
    async with LoadGenServer("judge") as endpoint:
        first, winner, _ = await deliberate(tmp_path / "a", nats_url, endpoint, COUNCIL)
        again, winner_again, _ = await deliberate(tmp_path / "b", nats_url, endpoint, COUNCIL)
        reseeded = [{**a, "seed": s} for a, s in zip(COUNCIL, OTHER_SEEDS, strict=True)]
        other, _, _ = await deliberate(tmp_path / "c", nats_url, endpoint, tuple(reseeded))

    scores = [score for _, _, score, _ in first]
    assert len(set(scores)) == 3, f"the judge's ratings must separate the agents: {first}"
    assert again == first and winner_again == winner == first[0][1]
    order = [agent for _, agent, _, _ in first]
    assert [agent for _, agent, _, _ in other] != order, "other seeds, same ranking"
    assert [score for _, _, score, _ in other] != scores


async def test_each_proposal_event_records_its_agents_sampling(
    tmp_path: Path, nats_url: str
) -> None:
    async with LoadGenServer("judge") as endpoint:
        _, _, settings = await deliberate(tmp_path, nats_url, endpoint, COUNCIL)
        sent = {r["user"]: r for r in endpoint.requests if "Give your proposal" in str(r)}

    events = await stored_events(nats_url, settings.stream, deliberation_id("det"))
    proposals = {e["agent_id"]: e for name, e in events if name == "ProposalReceived"}
    assert sorted(proposals) == ["agent-dev-001", "agent-dev-002", "agent-dev-003"]
    for i, spec in enumerate(COUNCIL):
        agent = f"agent-dev-{i + 1:03d}"
        recorded = proposals[agent]
        want = (spec["temperature"], spec["seed"], spec["persona"])
        assert (recorded["temperature"], recorded["seed"], recorded["persona"]) == want
        # what is on record is what the endpoint was asked with
        assert (sent[agent]["temperature"], sent[agent]["seed"]) == want[:2]
        assert str(spec["persona"]) in sent[agent]["messages"][0]["content"]
    for field in ("temperature", "seed", "persona"):
        assert len({p[field] for p in proposals.values()}) == 3, f"{field} not distinct per agent"
