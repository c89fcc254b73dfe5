"""The task context's rendering: the budget is kept (characters / 4), the most important blocks
are filled first, options and scopes are honoured, and agents see the context in their prompt."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from agent_runtime.api import AgentTurn
from agent_runtime.member.prompts import build_messages
from application.task_context import ContextFacts, ContextScope, Decision, render_context

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def facts(n_decisions: int = 3, n_events: int = 5) -> ContextFacts:
    return ContextFacts(
        role="QA",
        task_id="plan:P:QA",
        task="Test the CSV export",
        phase="TEST",
        story_id="US-1",
        story_phases=(("DESIGN", "BUILD", T0),),
        plan_id="P",
        plan_description="Export invoices as CSV",
        plan_tasks=("writer", "endpoint"),
        decisions=tuple(
            Decision(f"t{i}", "DEV", "COMPLETED", f"dev-agent-{i}", "highest score", "x" * 300, T0)
            for i in range(n_decisions)
        ),
        events=tuple((T0 + timedelta(seconds=i), f"event {i}") for i in range(n_events)),
    )


def test_everything_fits_a_roomy_budget_newest_events_first() -> None:
    c = render_context(facts(), ContextScope(max_events=2))
    assert c.system.startswith("Role: QA.") and "Phase: TEST." in c.system
    assert "Story US-1 (phase BUILD)." in c.context and "- writer" in c.context
    assert c.context.count(" won. Why: highest score") == 3
    assert c.history.splitlines()[0].endswith("event 4") and len(c.history.splitlines()) == 2
    assert c.version_hash == hashlib.sha256(c.text.encode()).hexdigest()
    assert c.token_count == -(-len(c.text) // 4)


def test_a_tight_budget_keeps_the_task_and_cuts_what_comes_later() -> None:
    c = render_context(facts(n_decisions=30, n_events=50), ContextScope(token_budget=300))
    assert c.token_count <= 300 + 20  # the block titles are outside the line budget
    assert "Task plan:P:QA" in c.system and "Story US-1" in c.context
    assert "left out: token budget" in c.context  # decisions cut, said so
    assert len(c.history.splitlines()) < 20  # the timeline gets only what is left


def test_options_and_scopes_are_honoured() -> None:
    c = render_context(
        facts(),
        ContextScope(include_decisions=False, include_summaries=False, include_timeline=False),
    )
    assert "Decisions" not in c.text and "writer" not in c.text and c.history == ""
    only = render_context(facts(), ContextScope(sections=frozenset({"timeline"})))
    assert only.context == "" and only.tools == "" and only.history


def test_an_agent_of_a_story_task_sees_its_context_before_the_task() -> None:
    turn = AgentTurn("d", "qa-agent-1", "QA", 0, "Test it", context="Story US-1. Plan P.")
    (user, _prefill) = build_messages(turn)
    assert "Context:\nStory US-1. Plan P.\n\nTask: Test it" in user.content
    assert "Context:" not in build_messages(AgentTurn("d", "a", "QA", 0, "t"))[0].content
