"""What people read: stored data is shown as it is (never swallowed as rich markup), and review
events read as ratings, not JSON."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from application.timeline import TimelineEntry
from fleet import render

AT = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def shown(draw: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    draw(console)  # type: ignore[operator]
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def test_query_values_with_brackets_are_printed_whole() -> None:
    data = [{"content": "def f(xs: list[int]) -> int: return xs[0]", "q": "(d)-[w:WON_BY]->(p)"}]
    out = shown(lambda c: render.rows(c, ["content", "q"], data))
    assert "list[int]" in out and "xs[0]" in out and "[w:WON_BY]" in out


def test_timeline_shows_ratings_per_peer_and_brackets_in_proposals() -> None:
    entries = [
        TimelineEntry(
            3,
            "ProposalReceived",
            AT,
            {"agent_id": "dev-agent-1", "round": 0, "tokens": 9, "latency_ms": 5,
             "content": "xs: list[int]"},
        ),
        TimelineEntry(
            4,
            "PeerRatingsReceived",
            AT,
            {"agent_id": "dev-agent-1", "latency_ms": 812, "error": "",
             "reviews": [{"reviewer": "dev-agent-1", "target": "dev-agent-2", "score": 0.7},
                         {"reviewer": "dev-agent-1", "target": "dev-agent-3", "score": None}]},
        ),
        TimelineEntry(
            5,
            "CritiqueReceived",
            AT,
            {"agent_id": "dev-agent-2", "round": 1, "reviews": [], "error": "HTTP 500"},
        ),
    ]  # fmt: skip
    out = shown(lambda c: render.timeline(c, entries, title="t"))
    assert "list[int]" in out
    assert "dev-agent-1 rated: dev-agent-2 0.70, dev-agent-3 ? (812 ms)" in out
    assert "dev-agent-2 critiqued (round 1): failed (HTTP 500), counts as neutral" in out
    assert '"reviews"' not in out
