"""Old events still replay: a stored version-1 ProposalReceived upcasts into today's aggregate."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from aggregates import AgentId, Deliberation, deliberation_id
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


def test_version_1_requests_and_snapshots_replay_with_no_trace_context() -> None:
    """Requested v2 added ``trace_context`` (and the snapshot state holds it): a deliberation
    stored before, from its events or from its snapshot, loads with none."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d_id = deliberation_id("old-2")
    at = {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()}
    v1_state = {
        "originator_id": {"_type_": "uuid_hex", "_data_": d_id.hex},
        "originator_version": 1,
        "timestamp": at,
        "originator_topic": get_topic(Deliberation),
        "task_id": "old-2", "task": "fib", "role": "DEV", "num_agents": 1, "rounds": 1,
        "rubric": "", "requirements": [], "metadata": {}, "timeout_seconds": 60,
        "deadline": at, "plan_id": "", "story_id": "", "requested_by": "grpc",
    }  # fmt: skip
    app.recorder.insert_events(
        [
            StoredEvent(
                originator_id=d_id,
                originator_version=1,
                topic=get_topic(Deliberation.Requested),
                state=json.dumps(v1_state).encode(),
            )
        ]
    )
    old = app.repository.get(d_id)
    assert (old.task_id, old.trace_context) == ("old-2", "")

    # A version-1 snapshot: the aggregate's state without trace_context and no class_version.
    snap = Deliberation.Snapshot.take(old)
    state = {k: v for k, v in snap.state.items() if k not in ("trace_context", "class_version")}
    assert "trace_context" not in state
    from_v1 = Deliberation.Snapshot(
        originator_id=snap.originator_id,
        originator_version=snap.originator_version,
        timestamp=snap.timestamp,
        topic=snap.topic,
        state=state,
    ).mutate(None)
    assert from_v1.trace_context == "" and from_v1.task_id == "old-2"


def test_a_request_keeps_the_trace_context_it_was_given() -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    d = Deliberation.request(
        task_id="t-1",
        task="fib",
        role="DEV",
        num_agents=1,
        rounds=1,
        requested_at=datetime.now(tz=UTC),
        timeout_seconds=60,
        trace_context=parent,
    )
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    app.save(d)
    assert app.repository.get(d.id).trace_context == parent
