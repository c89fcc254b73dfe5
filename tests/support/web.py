"""Data for the web console's tests: a finished deliberation with every kind of event, and a
history graph holding many deliberations, both written directly (no model, no waiting).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation, PeerReview
from projectors.graph.port import DecisionGraph
from tests.support.deliberations import requested

XSS = (
    "<script>window.__xss = 1</script>\n"
    '<img src=x onerror="window.__xss = 2">\n'
    '<a href="javascript:window.__xss = 3">click</a>\n'
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
)
"""A proposal that would run script if the page rendered it as HTML."""


MARKDOWN_XSS = (
    "## Plan\n\nUse **memoisation**; see [the docs](https://docs.python.org/3/) and "
    "[this](javascript:window.__xss=4) and [that](JAVASCRIPT:window.__xss=5).\n\n"
    '<script>window.__xss = 6</script>\n\n<img src=x onerror="window.__xss = 7">\n\n'
    "![pic](javascript:window.__xss=8)\n\n```python\ndef fib(n):\n    return n\n```\n"
)
"""A markdown proposal with script in every place markdown could carry it."""


def prompt_of(agent: str, round_no: int) -> tuple[tuple[str, str], ...]:
    """The chat a test agent 'sent': hostile text in it must show as text."""
    return (
        ("user", f"Task: fib(n) for {agent}, round {round_no} <script>window.__xss=9</script>"),
        ("assistant", "```python\n"),
    )


def _answer(agent: str, round_no: int, body: str) -> AgentAnswer:
    return AgentAnswer(
        content=body,
        model="loadgen",
        tokens=40 + round_no,
        latency_ms=120 + 10 * round_no,
        prompt_tokens=300 + round_no,
        prompt=prompt_of(agent, round_no),
        attempts=1 + round_no,
    )


def rich_deliberation(
    task_id: str,
    *,
    agents: int = 3,
    rounds: int = 2,
    content: str | None = None,
    task: str = "Write fib(n) <b>bold?</b>",
) -> Deliberation:
    """A COMPLETED deliberation: proposals, critiques and revisions each round, peer ratings,
    scored checks with output, a winner. ``content`` is agent 1's text (default: code)."""
    d = requested(task_id, num_agents=agents, rounds=rounds, task=task)
    ids = [AgentId(f"dev-agent-{i}") for i in range(1, agents + 1)]
    d.start(ids)
    for i, a in enumerate(ids):
        body = content if content is not None and i == 0 else f"def fib(n):  # by {a}\n    return n"
        d.receive_proposal(agent_id=a, round=0, answer=_answer(a, 0, body))
    for r in range(1, rounds):
        for i, a in enumerate(ids):
            peers = [ids[(i + k) % agents] for k in (1, 2) if agents > k]
            reviews = [
                PeerReview(a, p, 0.3 + 0.2 * k, f"{p}: handle n < 0") for k, p in enumerate(peers)
            ]
            d.receive_critique(agent_id=a, round=r, reviews=reviews, latency_ms=50)
        for i, a in enumerate(ids):
            prev = d.final_proposals()[a].content
            d.revise_proposal(
                agent_id=a, round=r, answer=_answer(a, r, f"{prev}\n# round {r}: n < 0 raises"),
                addressed=[ids[(i - 1) % agents]],
            )  # fmt: skip
    for i, a in enumerate(ids):
        peer = ids[(i + 1) % agents]
        d.receive_ratings(agent_id=a, reviews=[PeerReview(a, peer, 0.5 + 0.4 * (i % 2))])
    for i, a in enumerate(ids):
        checks = [
            CheckOutcome("lint", True, 1.0, "clean", {"output": f"ruff: All checks passed ({a})"}),
            CheckOutcome("tests", i % 2 == 0, 1.0 if i % 2 == 0 else 0.0, f"{3 - i % 2}/3 passed",
                         {"output": "test_fib_0 PASSED\ntest_fib_neg FAILED <script>x</script>"}),
        ]  # fmt: skip
        d.score(agent_id=a, score=round(0.9 - 0.01 * i, 3), checks=checks)
    d.complete()
    return d


def seed_listing(graph: DecisionGraph, n: int, *, start: datetime | None = None) -> None:
    """``n`` Deliberation nodes straight into the graph (as the projection would write them)."""
    t0 = start or datetime.now(tz=UTC) - timedelta(days=1)
    statuses = ("COMPLETED", "COMPLETED", "COMPLETED", "FAILED", "TIMEOUT", "IN_PROGRESS")
    roles = ("DEV", "QA", "ARCHITECT", "DEVOPS")
    rows: list[dict[str, Any]] = [
        {
            "id": f"00000000-0000-4000-8000-{i:012d}",
            "task_id": f"bulk-{i:05d}",
            "task": f"bulk task {i}",
            "role": roles[i % len(roles)],
            "status": statuses[i % len(statuses)],
            "num_agents": 3,
            "rounds": 1,
            "plan_id": f"plan-{i % 50}" if i % 5 == 0 else "",
            "story_id": f"story-{i % 50}" if i % 5 == 0 else "",
            "created_at": (t0 + timedelta(seconds=i)).isoformat(),
            "winner": "dev-agent-1" if statuses[i % len(statuses)] == "COMPLETED" else "",
        }
        for i in range(n)
    ]
    cypher = (
        "UNWIND $rows AS r CREATE (d:Deliberation {id: r.id, task_id: r.task_id, task: r.task, "
        "role: r.role, status: r.status, num_agents: r.num_agents, rounds: r.rounds, "
        "plan_id: r.plan_id, story_id: r.story_id, created_at: r.created_at, winner: r.winner})"
    )
    from tests.fixtures.graphs import behind_fleets_back

    for k in range(0, n, 2000):  # a fixture writes as the projection would
        behind_fleets_back(graph, cypher, {"rows": rows[k : k + 2000]})
