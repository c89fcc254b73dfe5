"""Old events still replay: a stored version-1 ProposalReceived upcasts into today's aggregate."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from aggregates import AgentAnswer, AgentId, Deliberation, deliberation_id
from application.app import FleetApplication
from tests.support.deliberations import requested


def _started(task_id: str, *, rounds: int) -> tuple[FleetApplication, Deliberation]:
    """An in-memory application holding a started one-agent deliberation."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = requested(task_id, task="fib", num_agents=1, rounds=rounds)
    d.start()
    app.save(d)
    return app, d


def test_version_1_proposal_events_replay_through_the_upcaster() -> None:
    app, d = _started("old-1", rounds=1)
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
    d = requested("t-1", task="fib", num_agents=1, trace_context=parent)
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    app.save(d)
    assert app.repository.get(d.id).trace_context == parent


def test_version_2_proposals_and_revisions_replay_as_not_retried() -> None:
    """ProposalReceived v3 (and so ProposalRevised) added ``thinking_retried``: what a Fleet
    before wrote (class_version 2) loads with False, and a new event keeps what it was given."""
    app, d = _started("old-3", rounds=3)
    at = {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()}
    v2_state = {
        "originator_id": {"_type_": "uuid_hex", "_data_": d.id.hex},
        "timestamp": at, "agent_id": "dev-agent-1", "content": "def fib(n): ...",
        "model": "m", "tokens": 7, "latency_ms": 12, "prompt_tokens": 3,
        "temperature": 0.2, "seed": 1, "persona": "", "class_version": 2,
    }  # fmt: skip
    old = [
        (Deliberation.ProposalReceived, {"round": 0}),
        (Deliberation.ProposalRevised, {"round": 1, "addressed": []}),
    ]
    app.recorder.insert_events(
        [
            StoredEvent(
                originator_id=d.id,
                originator_version=d.version + i,
                topic=get_topic(cls),
                state=json.dumps(
                    {**v2_state, **extra, "originator_version": d.version + i}
                ).encode(),
            )
            for i, (cls, extra) in enumerate(old, start=1)
        ]
    )
    replayed = app.repository.get(d.id)
    replayed.revise_proposal(
        agent_id=AgentId("dev-agent-1"),
        round=2,
        answer=AgentAnswer(
            content="def fib(n): return n",
            model="qwen3",
            tokens=9,
            latency_ms=20,
            thinking_retried=True,
        ),
    )
    app.save(replayed)

    events = [e for e in app.events.get(d.id) if isinstance(e, Deliberation.ProposalReceived)]
    assert [(type(e).__name__, e.round, e.thinking_retried) for e in events] == [
        ("ProposalReceived", 0, False),
        ("ProposalRevised", 1, False),
        ("ProposalRevised", 2, True),
    ]
    assert sorted(app.repository.get(d.id).proposals) == [
        (AgentId("dev-agent-1"), r) for r in (0, 1, 2)
    ]


def test_version_1_started_events_and_v2_snapshots_replay_with_no_seats() -> None:
    """Started v2 added the council a deliberation started with (``seats``,
    ``council_version``), and snapshot state v3 holds them: what was stored before loads with
    none, and its agents are those it recorded."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = requested("old-3", task="fib", num_agents=2, rounds=1)
    app.save(d)
    v1_state = {
        "originator_id": {"_type_": "uuid_hex", "_data_": d.id.hex},
        "originator_version": 2,
        "timestamp": {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()},
        "agents": ["dev-agent-1", "dev-agent-2"],
    }
    app.recorder.insert_events(
        [
            StoredEvent(
                originator_id=d.id,
                originator_version=2,
                topic=get_topic(Deliberation.Started),
                state=json.dumps(v1_state).encode(),
            )
        ]
    )
    old = app.repository.get(d.id)
    assert (old.agents, old.seats, old.council_version) == (["dev-agent-1", "dev-agent-2"], {}, 0)

    snap = Deliberation.Snapshot.take(old)
    dropped = ("seats", "council_version", "class_version")
    state = {k: v for k, v in snap.state.items() if k not in dropped}
    state["class_version"] = 2
    from_v2 = Deliberation.Snapshot(
        originator_id=snap.originator_id,
        originator_version=snap.originator_version,
        timestamp=snap.timestamp,
        topic=snap.topic,
        state=state,
    ).mutate(None)
    assert (from_v2.seats, from_v2.council_version) == ({}, 0)
    assert from_v2.agents == ["dev-agent-1", "dev-agent-2"]


def test_version_2_requests_and_v1_orchestrations_replay_with_peer_review_and_no_context() -> None:
    """Requested v3 added ``peer_review`` (a council may turn it off); OrchestrationRequested v2
    added ``context_options``: deliberations stored before replay as they ran, peer review on
    and the default prompt context."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d_id = deliberation_id("old-3")
    at = {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()}
    base = {"originator_id": {"_type_": "uuid_hex", "_data_": d_id.hex}, "timestamp": at}
    v2_request = {
        **base, "originator_version": 1, "originator_topic": get_topic(Deliberation),
        "task_id": "old-3", "task": "fib", "role": "DEV", "num_agents": 1, "rounds": 1,
        "rubric": "", "requirements": [], "metadata": {}, "timeout_seconds": 60,
        "deadline": at, "plan_id": "", "story_id": "", "requested_by": "grpc",
        "trace_context": "", "class_version": 2,
    }  # fmt: skip
    v1_orchestration = {
        **base, "originator_version": 2, "architect_k": 3, "peer_review": False, "case_id": "c",
    }  # fmt: skip
    app.recorder.insert_events(
        [
            StoredEvent(
                d_id, 1, get_topic(Deliberation.Requested), json.dumps(v2_request).encode()
            ),
            StoredEvent(
                d_id,
                2,
                get_topic(Deliberation.OrchestrationRequested),
                json.dumps(v1_orchestration).encode(),
            ),
        ]
    )
    old = app.repository.get(d_id)
    assert (old.architect_k, old.peer_review, old.context_options) == (3, False, None)
    plain = requested("new-1", task="fib", num_agents=1)
    assert plain.peer_review is True
    off = requested("new-2", task="fib", num_agents=1, peer_review=False)
    app.save(off)
    assert app.repository.get(off.id).peer_review is False


def test_version_3_proposals_replay_with_no_prompt_and_new_ones_keep_theirs() -> None:
    """ProposalReceived v4 added the chat as sent (``prompt``) and the HTTP requests the call
    took (``attempts``): a v3 event loads with neither (readers say "not recorded"), and a new
    answer keeps both, each message as ``{"role", "content"}``."""
    app, d = _started("old-4", rounds=2)
    at = {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()}
    v3_state = {
        "originator_id": {"_type_": "uuid_hex", "_data_": d.id.hex},
        "originator_version": d.version + 1, "timestamp": at, "agent_id": "dev-agent-1",
        "round": 0, "content": "def fib(n): ...", "model": "m", "tokens": 7, "latency_ms": 12,
        "prompt_tokens": 3, "temperature": 0.2, "seed": 1, "persona": "",
        "thinking_retried": False, "class_version": 3,
    }  # fmt: skip
    app.recorder.insert_events(
        [
            StoredEvent(
                originator_id=d.id,
                originator_version=d.version + 1,
                topic=get_topic(Deliberation.ProposalReceived),
                state=json.dumps(v3_state).encode(),
            )
        ]
    )
    replayed = app.repository.get(d.id)
    prompt = (("user", "Task: fib"), ("assistant", "```python\n"))
    answer = AgentAnswer("def fib(n): return n", "m", 9, 20, prompt=prompt, attempts=2)
    replayed.revise_proposal(agent_id=AgentId("dev-agent-1"), round=1, answer=answer)
    app.save(replayed)

    events = [e for e in app.events.get(d.id) if isinstance(e, Deliberation.ProposalReceived)]
    sent = [{"role": r, "content": c} for r, c in prompt]
    assert [(e.prompt, e.attempts) for e in events] == [([], 0), (sent, 2)]
