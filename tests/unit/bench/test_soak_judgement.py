"""The soak's judgement, on histories written by hand: each verdict catches what it names and
passes what is allowed, and a stall is charged to the right fault (``bench/soak``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from aggregates import Deliberation
from bench.soak._chaos import Fault
from bench.soak._load import Submission
from bench.soak._recovery import recovery_rows
from bench.soak._stream import History, StoredAnswers
from bench.soak._verdicts import (
    acknowledged_were_requested,
    all_terminal,
    no_false_failures,
    nothing_after_terminal,
    one_answer_each,
)

T0 = 1_800_000_000.0


def history(d_id: uuid.UUID, *events: tuple[float, type[Any], dict[str, Any]]) -> History:
    """Events of one deliberation at T0 + offset seconds; Requested first, with its task id."""
    h = History()
    fields: dict[str, Any] = {
        "task_id": f"task-{d_id.hex[:6]}", "task": "t", "role": "DEV", "num_agents": 3,
        "rounds": 1, "rubric": "", "requirements": [], "metadata": {}, "timeout_seconds": 60,
        "deadline": datetime.fromtimestamp(T0 + 60, UTC), "plan_id": "", "story_id": "",
        "requested_by": "", "trace_context": "", "originator_topic": "x", "peer_review": True,
    }  # fmt: skip
    for version, (at, cls, more) in enumerate([(0.0, Deliberation.Requested, fields), *events]):
        h.positions.append(len(h.positions) + 1)
        h.events.append(
            cls(
                originator_id=d_id,
                originator_version=version + 1,
                timestamp=datetime.fromtimestamp(T0 + at, UTC),
                **more,
            )
        )
    return h


def failed(agent: str, rnd: int = 0) -> dict[str, Any]:
    return {"agent_id": agent, "round": rnd, "error": "no worker answered within 20.0 s"}


def done() -> dict[str, Any]:
    return {"winner": "a", "ranking": ["a"]}


def test_an_acknowledged_task_without_a_requested_event_is_lost() -> None:
    d = uuid.uuid4()
    h = history(d)
    subs = [
        Submission(h.task_id, "DEV", 1, T0, acked_at=T0),
        Submission("never-stored", "DEV", 1, T0, acked_at=T0),
        Submission("not-acknowledged", "DEV", 1, T0),
    ]
    verdict = acknowledged_were_requested(subs, {d: h})
    assert not verdict.ok
    assert verdict.violations == ["never-stored: acknowledged, no Requested event"]


def test_a_second_answer_for_one_agent_and_round_is_a_duplicate() -> None:
    d, e = uuid.uuid4(), uuid.uuid4()
    twice = history(
        d, (1, Deliberation.AgentFailed, failed("a")), (2, Deliberation.AgentFailed, failed("a"))
    )
    other_rounds = history(
        e,
        (1, Deliberation.AgentFailed, failed("a", 0)),
        (2, Deliberation.AgentFailed, failed("a", 1)),
    )
    verdict = one_answer_each({d: twice, e: other_rounds})
    assert [v.split(":")[0] for v in verdict.violations] == [twice.task_id]


def test_an_agent_failed_with_its_answer_stored_is_a_false_failure() -> None:
    d = uuid.uuid4()
    h = history(
        d, (1, Deliberation.AgentFailed, failed("a")), (2, Deliberation.AgentFailed, failed("b"))
    )
    stored = StoredAnswers(frozenset({(str(d), 0, "a")}), frozenset(), 1)
    verdict = no_false_failures({d: h}, stored)
    assert len(verdict.violations) == 1 and " a round 0 failed" in verdict.violations[0]


def test_only_a_late_answer_may_follow_a_terminal_event() -> None:
    d, e = uuid.uuid4(), uuid.uuid4()
    late = {
        "agent_id": "a",
        "round": 0,
        "content": "c",
        "model": "m",
        "status_at_arrival": "COMPLETED",
    }
    fine = history(
        d, (1, Deliberation.Completed, done()), (2, Deliberation.LateProposalReceived, late)
    )
    changed = history(
        e, (1, Deliberation.Completed, done()), (2, Deliberation.Failed, {"reason": "r"})
    )
    verdict = nothing_after_terminal({d: fine, e: changed})
    assert verdict.violations == [f"{changed.task_id}: Failed after Completed"]
    assert not all_terminal({d: fine, e: history(uuid.uuid4())}).ok


def test_a_stall_is_charged_to_the_first_fault_on_its_path_and_lasts_to_the_next_event() -> None:
    d = uuid.uuid4()
    # Events at 0 and 1 s, then nothing until 13 s: a stall. The projectors (not on a
    # deliberation's path) died at 1.5 s, a dispatcher at 2 s, a worker at 5 s (inside, later).
    h = history(d, (1, Deliberation.AgentFailed, failed("a")), (13, Deliberation.Completed, done()))
    faults = [
        Fault("projectors", "projectors", "SIGKILL", T0 + 1.5, T0 + 1.6, T0 + 3.0),
        Fault("dispatcher-1", "dispatcher", "SIGKILL", T0 + 2.0, T0 + 2.1, T0 + 3.0, starts=1),
        Fault("worker-1", "worker", "SIGKILL", T0 + 5.0, T0 + 5.1, T0 + 6.0, starts=2),
    ]
    rows = {r.kind: r for r in recovery_rows(faults, {d: h}, [], stall_s=2.0)}
    assert rows["dispatcher"].held_up == 1 and rows["dispatcher"].recovery_s == [11.0]
    assert rows["worker"].held_up == 0 and rows["worker"].failed_starts == 1
    assert rows["projectors"].held_up == 0 and rows["projectors"].recovery_s == []
