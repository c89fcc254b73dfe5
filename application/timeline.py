"""A deliberation's events as a readable timeline (``fleet replay``, GetDeliberationHistory)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast
from uuid import UUID

from aggregates import Deliberation
from application.events import FleetEvent

_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


@dataclass(frozen=True)
class TimelineEntry:
    version: int
    type: str
    at: datetime
    data: dict[str, Any]

    @property
    def summary(self) -> str:
        d = self.data
        match self.type:
            case "Requested":
                return (
                    f"{d['role']} x{d['num_agents']}, {d['rounds']} round(s): {_short(d['task'])}"
                )
            case "Started":
                return "agents " + ", ".join(d["agents"])
            case "ProposalReceived":
                return (
                    f"{d['agent_id']} round {d['round']}: {d['tokens']} tokens, "
                    f"{d['latency_ms']} ms — {_short(d['content'])}"
                )
            case "ProposalRevised":
                return (
                    f"{d['agent_id']} revised in round {d['round']}: {d['tokens']} tokens, "
                    f"{d['latency_ms']} ms — {_short(d['content'])}"
                )
            case "CritiqueReceived":
                return f"{d['agent_id']} critiqued (round {d['round']}): {_ratings(d)}"
            case "PeerRatingsReceived":
                return f"{d['agent_id']} rated: {_ratings(d)}"
            case "LateProposalReceived":
                return f"{d['agent_id']} round {d['round']} arrived late ({d['status_at_arrival']})"
            case "AgentFailed":
                return f"{d['agent_id']} round {d['round']}: {d['error']}"
            case "ProposalScored":
                passed = sum(1 for c in d["checks"] if c["passed"])
                return (
                    f"{d['agent_id']} score {d['score']:.2f} ({passed}/{len(d['checks'])} checks)"
                )
            case "Completed":
                return f"winner {d['winner']}; ranking {', '.join(d['ranking'])}"
            case "TimedOut":
                return f"received {d['received']}, missing {d['missing']}"
            case "Failed" | "Cancelled":
                return str(d["reason"])
            case "OrchestrationRequested":
                k = d["architect_k"]
                return f"orchestration: architect among top {k}" if k else "orchestration"
            case "ArchitectSelected":
                return (
                    f"architect {d['architect_id']} chose {d['winner']}: {_short(d['rationale'])}"
                )
            case "ArchitectFellBack":
                return f"highest score wins ({d['winner']}): {_short(d['reason'])}"
        return json.dumps(d, default=str)[:80]


@dataclass(frozen=True)
class History:
    deliberation: Deliberation
    """The aggregate folded up to the requested version."""
    entries: list[TimelineEntry]


def fold_history(events: Sequence[FleetEvent], to_version: int | None = None) -> History:
    """Fold stored events (oldest first) into the aggregate, as replay does, up to a version."""
    if to_version:
        events = [e for e in events if e.originator_version <= to_version]
    aggregate: Deliberation | None = None
    for e in events:
        aggregate = e.mutate(aggregate)
    # None only when no event is left at or below ``to_version``; callers ask for one there is.
    return History(deliberation=cast(Deliberation, aggregate), entries=[entry(e) for e in events])


def entry(event: FleetEvent) -> TimelineEntry:
    data = {k: v for k, v in vars(event).items() if k not in _ENVELOPE}
    return TimelineEntry(
        version=int(event.originator_version),
        type=type(event).__name__,
        at=event.timestamp,
        data=data,
    )


def to_json(value: object) -> str:
    return json.dumps(value, default=_default, sort_keys=True)


def _default(o: object) -> str:
    if isinstance(o, datetime):
        return o.isoformat()
    if isinstance(o, UUID):
        return str(o)
    return str(o)


def _ratings(d: dict[str, Any]) -> str:
    """A review event's ratings, one per peer ("?" where the reviewer gave nothing usable)."""
    if d.get("error"):
        return f"failed ({_short(d['error'])}), counts as neutral"
    marks = [
        f"{r.get('target', '?')} {r['score']:.2f}"
        if r.get("score") is not None
        else f"{r.get('target', '?')} ?"
        for r in d.get("reviews") or []
    ]
    return (", ".join(marks) or "nothing usable") + f" ({d.get('latency_ms', 0)} ms)"


def _short(text: str, n: int = 60) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= n else one[: n - 1] + "…"
