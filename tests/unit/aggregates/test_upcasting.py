"""Old events still replay: a stored version-1 ProposalReceived upcasts into today's aggregate."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from aggregates import AgentId, Deliberation
from fleet.application import FleetApplication


def test_version_1_proposal_events_replay_through_the_upcaster() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = Deliberation.request(
        task_id="old-1",
        task="fib",
        role="DEV",
        num_agents=1,
        rounds=1,
        requested_at=datetime.now(tz=UTC),
        timeout_seconds=60,
    )
    d.start()
    app.save(d)
    # What a Fleet before class_version 2 wrote: no prompt_tokens, no sampling, no class_version.
    v1_state = {
        "originator_id": {"_type_": "uuid_hex", "_data_": d.id.hex},
        "originator_version": d.version + 1,
        "timestamp": {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()},
        "agent_id": "dev-agent-1",
        "round": 0,
        "content": "def fib(n): ...",
        "model": "old-model",
        "tokens": 7,
        "latency_ms": 12,
    }
    stored = StoredEvent(
        originator_id=d.id,
        originator_version=d.version + 1,
        topic=get_topic(Deliberation.ProposalReceived),
        state=json.dumps(v1_state).encode(),
    )
    app.recorder.insert_events([stored])

    replayed = app.repository.get(d.id)
    p = replayed.proposals[(AgentId("dev-agent-1"), 0)]
    assert (p.content, p.model, p.tokens) == ("def fib(n): ...", "old-model", 7)
    assert (p.prompt_tokens, p.temperature, p.seed, p.persona) == (0, None, None, "")
    assert replayed.version == d.version + 1
