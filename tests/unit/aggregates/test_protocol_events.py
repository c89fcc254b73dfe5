"""Critiques, revisions and peer ratings on the Deliberation aggregate; the Plan aggregate."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aggregates import (
    AgentAnswer,
    AgentId,
    Deliberation,
    DeliberationStatus,
    DuplicateProposalError,
    InvalidDeliberationError,
    PeerReview,
    Plan,
    Role,
    UnknownAgentError,
    plan_deliberation_task_id,
    plan_id_of,
)
from application.app import FleetApplication

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
A1, A2, A3 = AgentId("dev-agent-1"), AgentId("dev-agent-2"), AgentId("dev-agent-3")


def two_rounds() -> Deliberation:
    d = Deliberation.request(
        task_id="t", task="fib", role="DEV", num_agents=3, rounds=2, requested_at=T0,
        timeout_seconds=60,
    )  # fmt: skip
    d.start()
    for a in (A1, A2):
        d.receive_proposal(
            agent_id=a,
            round=0,
            answer=AgentAnswer(content=f"v0 {a}", model="m", tokens=1, latency_ms=1),
        )
    d.fail_agent(agent_id=A3, round=0, error="boom")
    return d


def test_later_rounds_are_for_agents_that_proposed() -> None:
    d = two_rounds()
    assert d.participants(0) == [A1, A2, A3]
    assert d.participants(1) == [A1, A2]


def test_critiques_are_recorded_once_per_reviewer_and_round() -> None:
    d = two_rounds()
    rv = PeerReview(A1, A2, 0.7, "handles n=0?", "structured")
    assert d.receive_critique(agent_id=A1, round=1, reviews=[rv], model="m", tokens=5)
    assert d.critiques_of(A2, 1) == [rv]
    assert d.critiqued(1) == {A1}
    with pytest.raises(DuplicateProposalError):
        d.receive_critique(agent_id=A1, round=1, reviews=[rv])
    with pytest.raises(UnknownAgentError):  # a self-review
        d.receive_critique(agent_id=A2, round=1, reviews=[PeerReview(A2, A2, 1.0)])
    with pytest.raises(InvalidDeliberationError):
        d.receive_critique(agent_id=A2, round=0, reviews=[])
    assert d.receive_critique(agent_id=A2, round=1, reviews=[], error="HTTP 500")
    assert d.critiqued(1) == {A1, A2}


def test_a_revision_is_the_agents_latest_proposal_and_counts_once() -> None:
    d = two_rounds()
    assert d.revise_proposal(
        agent_id=A1,
        round=1,
        addressed=[A2],
        answer=AgentAnswer(content="v1", model="m", tokens=2, latency_ms=3),
    )
    assert d.final_proposals()[A1].content == "v1"
    assert d.final_proposals()[A2].content == f"v0 {A2}"
    with pytest.raises(DuplicateProposalError):
        d.revise_proposal(
            agent_id=A1,
            round=1,
            answer=AgentAnswer(content="again", model="m", tokens=1, latency_ms=1),
        )
    with pytest.raises(InvalidDeliberationError):
        d.revise_proposal(
            agent_id=A2, round=0, answer=AgentAnswer(content="x", model="m", tokens=1, latency_ms=1)
        )


def test_ratings_feed_the_record_and_late_revisions_change_nothing() -> None:
    d = two_rounds()
    d.receive_ratings(agent_id=A1, reviews=[PeerReview(A1, A2, 0.9, "good", "parsed")])
    d.receive_ratings(agent_id=A2, reviews=[PeerReview(A2, A1, None, "junk", "fallback")])
    assert [r.score for r in d.ratings_of(A2)] == [0.9]
    assert d.rated() == {A1, A2}
    with pytest.raises(DuplicateProposalError):
        d.receive_ratings(agent_id=A1, reviews=[])
    d.cancel("stop")
    assert not d.revise_proposal(
        agent_id=A2, round=1, answer=AgentAnswer(content="late", model="m", tokens=1, latency_ms=1)
    )
    assert d.late == [A2] and d.status is DeliberationStatus.CANCELLED
    assert not d.receive_ratings(agent_id=A3, reviews=[])


def test_protocol_events_replay_to_the_same_state() -> None:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = two_rounds()
    d.receive_critique(agent_id=A1, round=1, reviews=[PeerReview(A1, A2, 0.5, "ok")])
    d.revise_proposal(
        agent_id=A2, round=1, answer=AgentAnswer(content="v1", model="m", tokens=1, latency_ms=1)
    )
    d.receive_ratings(agent_id=A2, reviews=[PeerReview(A2, A1, 0.25, "meh", "parsed")])
    app.save(d)
    again = app.repository.get(d.id)
    assert again.critiques == d.critiques and again.ratings == d.ratings
    assert again.final_proposals()[A2].content == "v1"
    events = list(app.events.get(d.id))
    revised = [e for e in events if isinstance(e, Deliberation.ProposalRevised)]
    assert len(revised) == 1 and isinstance(revised[0], Deliberation.ProposalReceived)


def test_a_plan_carries_its_content_into_each_roles_task() -> None:
    p = Plan.approve(
        plan_id="P-1", story_id="S-9", approved_by="po", approved_at=T0,
        roles=["dev", "QA", "dev"], description="Add login", tasks=["form", "session"],
    )  # fmt: skip
    assert p.id == plan_id_of("P-1")
    assert p.roles == [Role.DEV, Role.QA]
    assert p.task_ids() == [plan_deliberation_task_id("P-1", "DEV"), "plan:P-1:QA"]
    text = p.task_for(Role.DEV)
    assert "Add login" in text and "1. form" in text and "2. session" in text and "S-9" in text
    p.mark_requested(p.task_ids())
    p.mark_requested(["ignored"])
    assert p.dispatched and p.requested_task_ids == p.task_ids()


def test_a_plan_needs_ids_and_known_roles_and_invents_none() -> None:
    with pytest.raises(InvalidDeliberationError, match="plan_id"):
        Plan.approve(plan_id=" ", story_id="s", approved_at=T0)
    with pytest.raises(InvalidDeliberationError, match="story_id"):
        Plan.approve(plan_id="p", story_id="", approved_at=T0)
    with pytest.raises(InvalidDeliberationError, match="role"):
        Plan.approve(plan_id="p", story_id="s", approved_at=T0, roles=["CHEF"])
    assert Plan.approve(plan_id="p", story_id="s", approved_at=T0).roles == []  # none invented
