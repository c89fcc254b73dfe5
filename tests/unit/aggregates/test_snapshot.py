"""A Deliberation's snapshot stores (through the JSON transcoder) and restores its whole state."""

from __future__ import annotations

import pytest

from aggregates import AgentAnswer, AgentId, CheckOutcome
from aggregates.snapshot_state import SnapshotCodec
from application.app import FleetApplication
from tests.support.deliberations import requested


def test_snapshot_round_trips_a_completed_deliberation() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = requested("snap-1", task="fib", num_agents=2)
    d.start()
    for i, agent in enumerate(d.default_agents()):
        d.receive_proposal(
            agent_id=agent,
            round=0,
            answer=AgentAnswer(
                content=f"answer {i}",
                model="m",
                tokens=3,
                latency_ms=4,
                temperature=0.3,
                seed=i,
                persona="p",
            ),
        )
    for i, agent in enumerate(d.default_agents()):
        d.score(agent_id=agent, score=0.5 + i / 10, checks=[CheckOutcome("lint", True, 1.0)])
    d.complete()
    app.save(d)
    app.take_snapshot(d.id)
    assert app.snapshots is not None
    assert [s.originator_version for s in app.snapshots.get(d.id)] == [d.version]

    restored = app.repository.get(d.id)
    assert vars(restored) == vars(d)
    assert restored.final_proposals()[AgentId("dev-agent-2")].checks == [
        CheckOutcome("lint", True, 1.0)
    ]


def test_decoding_refuses_a_class_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="unregistered type 'Popen'"):
        SnapshotCodec().decode({"__t": "Popen", "f": {"args": ["rm"]}})
