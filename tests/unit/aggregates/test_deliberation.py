"""The Deliberation aggregate's invariants, given → when → then, with no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from aggregates import (
    AgentAnswer,
    AgentId,
    CheckOutcome,
    DeadlineNotReachedError,
    Deliberation,
    DeliberationClosedError,
    DeliberationStatus,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
    deliberation_id,
)

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
A1, A2, A3 = AgentId("dev-agent-1"), AgentId("dev-agent-2"), AgentId("dev-agent-3")


def requested(**kw: object) -> Deliberation:
    args: dict[str, object] = dict(
        task_id="t-1",
        task="Write a Python function that returns the n-th Fibonacci number",
        role="DEV",
        num_agents=3,
        rounds=1,
        requested_at=T0,
        timeout_seconds=60,
    )
    args.update(kw)
    return Deliberation.request(**args)  # type: ignore[arg-type]


def propose(d: Deliberation, agent: AgentId, content: str = "def f(): ...", rnd: int = 0) -> bool:
    return d.receive_proposal(
        agent_id=agent,
        round=rnd,
        answer=AgentAnswer(content=content, model="m", tokens=5, latency_ms=10),
    )


def replay(d: Deliberation) -> Deliberation:
    copy = None
    for e in d.collect_events():
        copy = e.mutate(copy)
    assert isinstance(copy, Deliberation)
    return copy


def test_request_records_deadline_and_pending_status() -> None:
    d = requested()
    assert d.status is DeliberationStatus.PENDING
    assert d.deadline == T0 + timedelta(seconds=60)
    assert d.id == deliberation_id("t-1")  # same task id, same aggregate: idempotent requests


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"role": "CHEF"}, "role"),
        ({"num_agents": 0}, "num_agents"),
        ({"num_agents": 17}, "num_agents"),
        ({"rounds": 0}, "rounds"),
        ({"rounds": 6}, "rounds"),
        ({"task": "  "}, "task_description"),
        ({"task": "x" * (64 * 1024 + 1)}, "task_description"),
        ({"task_id": ""}, "task_id"),
    ],
)
def test_bad_requests_name_the_field(kw: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidDeliberationError) as e:
        requested(**kw)
    assert e.value.field == field


def test_no_second_proposal_from_the_same_agent_in_the_same_round() -> None:
    d = requested()
    d.start()
    assert propose(d, A1)
    with pytest.raises(DuplicateProposalError):
        propose(d, A1, "another answer")
    assert d.proposals[(A1, 0)].content == "def f(): ..."


def test_an_agent_that_failed_cannot_also_propose_in_that_round() -> None:
    d = requested()
    d.start()
    d.fail_agent(agent_id=A2, round=0, error="boom")
    with pytest.raises(DuplicateProposalError):
        propose(d, A2)


def test_unknown_agent_and_round_out_of_range_are_refused() -> None:
    d = requested()
    d.start()
    with pytest.raises(UnknownAgentError):
        propose(d, AgentId("qa-agent-1"))
    with pytest.raises(UnknownAgentError):
        propose(d, A1, rnd=1)


def test_no_proposal_after_a_terminal_state_it_is_recorded_late_and_changes_nothing() -> None:
    d = requested()
    d.start()
    propose(d, A1)
    d.time_out(T0 + timedelta(seconds=61))
    assert d.status is DeliberationStatus.TIMEOUT
    assert not propose(d, A2, "too late")
    assert (A2, 0) not in d.proposals
    assert d.late == [A2]
    assert d.status is DeliberationStatus.TIMEOUT
    assert replay(d).late == [A2]


def test_timeout_keeps_partial_results_and_names_the_missing() -> None:
    d = requested()
    d.start()
    propose(d, A1)
    with pytest.raises(DeadlineNotReachedError):
        d.time_out(T0 + timedelta(seconds=59))
    d.time_out(T0 + timedelta(seconds=60))
    assert d.status is DeliberationStatus.TIMEOUT
    assert list(d.final_proposals()) == [A1]
    assert d.missing == [A2, A3]
    with pytest.raises(DeliberationClosedError):
        d.complete()


def test_winner_comes_from_scores_not_from_agent_order() -> None:
    d = requested()
    d.start()
    for a in (A1, A2, A3):
        propose(d, a, f"answer of {a}")
    d.score(agent_id=A1, score=0.2, checks=[CheckOutcome("lint", False, 0.0, "E1")])
    d.score(agent_id=A2, score=0.5, checks=[])
    d.score(agent_id=A3, score=0.9, checks=[CheckOutcome("compile", True, 1.0)])
    d.complete()
    assert d.status is DeliberationStatus.COMPLETED
    assert d.winner == A3
    assert d.ranking == [A3, A2, A1]
    r = replay(d)
    assert (r.winner, r.ranking, r.version) == (A3, [A3, A2, A1], d.version)
    assert r.final_proposals()[A3].checks == [CheckOutcome("compile", True, 1.0)]


def test_ties_break_on_content_independent_of_agent_numbering() -> None:
    def winner_content(order: list[tuple[AgentId, str]]) -> str:
        d = requested(task_id="tie")
        d.start()
        for a, c in order:
            propose(d, a, c)
            d.score(agent_id=a, score=0.5, checks=[])
        d.complete()
        assert d.winner is not None
        return d.final_proposals()[d.winner].content

    contents = ["alpha", "beta", "gamma"]
    first = winner_content(list(zip([A1, A2, A3], contents, strict=True)))
    second = winner_content(list(zip([A1, A2, A3], reversed(contents), strict=True)))
    assert first == second


def test_complete_needs_scores_and_fails_when_every_agent_failed() -> None:
    d = requested()
    d.start()
    propose(d, A1)
    with pytest.raises(InvalidDeliberationError):
        d.complete()
    d2 = requested(task_id="t-2")
    d2.start()
    for a in (A1, A2, A3):
        d2.fail_agent(agent_id=a, round=0, error=f"{a} unreachable")
    d2.complete()
    assert d2.status is DeliberationStatus.FAILED
    assert "dev-agent-3 unreachable" in d2.reason


def test_start_is_idempotent_and_closed_states_are_final() -> None:
    d = requested()
    d.start()
    v = d.version
    d.start()
    assert d.version == v
    d.cancel("user asked")
    with pytest.raises(DeliberationClosedError):
        d.fail("again")
    assert d.status is DeliberationStatus.CANCELLED
