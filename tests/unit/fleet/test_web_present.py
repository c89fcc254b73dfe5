"""What the web console's deliberation page is made of, computed from events (pure, no server)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from application.timeline import History, TimelineEntry, fold_history
from fleet.config import ConfigError, Settings
from fleet.web import _present
from tests.support.web import rich_deliberation


def _history(rounds: int = 2) -> History:
    d = rich_deliberation("present-1", agents=3, rounds=rounds)
    return fold_history(list(d.collect_events()))


def test_each_revision_is_a_diff_against_the_same_agents_previous_proposal() -> None:
    page = _present.detail(_history(), latest_version=0)
    first, *later = [p for p in page["proposals"] if p["agent_id"] == "dev-agent-2"]
    assert first["diff"] is None and not first["revised"]
    assert later[0]["revised"] and later[0]["diff"] == [
        "@@ -1,2 +1,3 @@",
        " def fib(n):  # by dev-agent-2",
        "     return n",
        "+# round 1: n < 0 raises",
    ]


def test_critiques_and_ratings_are_edges_and_calls_keep_their_latency() -> None:
    page = _present.detail(_history(), latest_version=0)
    kinds = {(e["kind"], e["from"], e["to"]) for e in page["edges"]}
    assert ("critique", "dev-agent-1", "dev-agent-2") in kinds
    assert ("rating", "dev-agent-1", "dev-agent-2") in kinds
    assert {c["kind"] for c in page["calls"]} == {"proposal", "revision", "critique", "rating"}
    assert page["winner"] == "dev-agent-1" and page["final"][0]["checks"][0]["check_type"]


def test_an_event_type_it_does_not_know_still_shows_and_an_architect_choice_is_read() -> None:
    at = datetime.now(tz=UTC)
    chosen = TimelineEntry(9, "ArchitectSelected", at, {"winner": "a-2", "rationale": "simplest"})
    assert _present.architect([chosen]) == {
        "type": "ArchitectSelected", "version": 9, "winner": "a-2", "rationale": "simplest"
    }  # fmt: skip
    odd = TimelineEntry(3, "SomethingNew", at, {"when": at, "n": {1, 2}})
    shown = _present.event_json(odd)
    assert shown["type"] == "SomethingNew" and shown["data"]["when"] == at.isoformat()


def test_a_long_diff_is_cut_with_a_note() -> None:
    lines = _present.line_diff("", "\n".join(str(i) for i in range(1000)))
    assert len(lines) == _present.MAX_DIFF_LINES + 1 and lines[-1].startswith("… ")


def test_the_web_port_setting_is_checked_and_named() -> None:
    assert Settings.from_env({}).web_port == 8470
    assert Settings.from_env({"FLEET_WEB_PORT": "0"}).web_port == 0
    with pytest.raises(ConfigError, match="FLEET_WEB_PORT"):
        Settings.from_env({"FLEET_WEB_PORT": "70000"})


def test_agents_still_out_at_the_deadline_show_as_timed_out_calls() -> None:
    at = datetime.now(tz=UTC)
    gone = TimelineEntry(7, "TimedOut", at, {"received": ["a-1"], "missing": ["a-2"]})
    (call,) = _present.calls([gone])
    assert call["kind"] == "timeout" and call["agent_id"] == "a-2"
