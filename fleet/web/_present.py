"""What the console shows of one deliberation, as plain JSON-ready data: pure and sync.

Everything here is computed from the deliberation's stored events (the timeline entries of
``application.timeline``) and the aggregate folded from them, so the page at version N is the
state ``fleet replay --to-version N`` prints, and a deliberation looks the same live and after.

Events are read by name and field, tolerantly: an event type this module does not know (one a
later protocol adds) still shows in the timeline, and an event whose name says it is the
architect's choice (``ArchitectSelected``) is shown with whatever winner and rationale it holds.
Revisions are diffed here, on the server, with ``difflib``; the browser renders the lines as text.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from application.listing import Summary
from application.timeline import History, TimelineEntry

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

JsonObject = dict[str, Any]

_PROPOSALS = ("ProposalReceived", "ProposalRevised")
_REVIEWS = {"CritiqueReceived": "critique", "PeerRatingsReceived": "rating"}
_CALLS = {
    "ProposalReceived": "proposal",
    "ProposalRevised": "revision",
    "CritiqueReceived": "critique",
    "PeerRatingsReceived": "rating",
    "AgentFailed": "failure",
    "LateProposalReceived": "late",
}
MAX_DIFF_LINES = 400
"""A diff longer than this is cut (the proposal itself is shown whole beside it)."""


def iso(t: datetime | None) -> str:
    return t.isoformat() if t is not None else ""


def summary_json(s: Summary) -> JsonObject:
    """One row of the deliberation list."""
    return {
        "deliberation_id": s.deliberation_id,
        "task_id": s.task_id,
        "role": s.role,
        "status": s.status,
        "plan_id": s.plan_id,
        "story_id": s.story_id,
        "created_at": iso(s.created_at),
        "finished_at": iso(s.finished_at),
        "winner": s.winner,
        "num_agents": s.num_agents,
        "rounds": s.rounds,
        "task": s.task[:200],
    }


def event_json(e: TimelineEntry) -> JsonObject:
    """One event as the timeline and the event tail show it: its data as JSON, whole but for a
    recorded prompt, which is named here and sent only when its call is opened (``call_json``):
    a 16-agent deliberation's prompts would otherwise be most of every page's bytes."""
    data = _plain(e.data)
    if isinstance(data.get("prompt"), list):
        data["prompt"] = f"{len(data['prompt'])} message(s): open the call to read them"
    return {
        "version": e.version,
        "type": e.type,
        "at": iso(e.at),
        "summary": e.summary if _summarisable(e) else e.type,
        "data": data,
    }


def call_json(e: TimelineEntry) -> JsonObject:
    """One call's recorded prompt (``ProposalReceived.prompt``, v4 on) and its answer, whole."""
    prompt = e.data.get("prompt")
    return {
        "version": e.version,
        "type": e.type,
        "prompt": _plain(prompt) if prompt else None,
        "prompt_note": "" if prompt else _no_prompt(e.type),
        "answer": str(e.data.get("content", "")),
    }


def _no_prompt(event_type: str) -> str:
    if event_type in _PROPOSALS:
        return "not recorded: this answer predates recorded prompts (event v3 or older)"
    return "not recorded: Fleet keeps the prompts of proposal and revision calls only"


def _summarisable(e: TimelineEntry) -> bool:
    try:
        e.summary  # noqa: B018 - a known type with a field missing must not break the page
    except (KeyError, TypeError, ValueError):
        return False
    return True


def detail(history: History, latest_version: int) -> JsonObject:
    """The deliberation page at ``history``'s version (``latest_version``: the slider's end)."""
    d = history.deliberation
    entries = history.entries
    ranks = {str(a): i + 1 for i, a in enumerate(d.ranking)}
    final = [
        {
            "agent_id": str(agent),
            "round": p.round,
            "content": p.content,
            "model": p.model,
            "tokens": p.tokens,
            "latency_ms": p.latency_ms,
            "score": p.score,
            "rank": ranks.get(str(agent)),
            "checks": [c.as_dict() for c in p.checks],
        }
        for agent, p in sorted(d.final_proposals().items())
    ]
    return {
        "task_id": d.task_id,
        "deliberation_id": str(d.id),
        "version": d.version,
        "latest_version": latest_version,
        "status": d.status.value,
        "role": d.role.value,
        "task": d.task,
        "plan_id": d.plan_id,
        "story_id": d.story_id,
        "num_agents": d.num_agents,
        "rounds": d.rounds,
        "agents": [str(a) for a in d.agents],
        "winner": str(d.winner) if d.winner is not None else "",
        "ranking": [str(a) for a in d.ranking],
        "reason": d.reason,
        "final": final,
        "calls": calls(entries),
        "proposals": revisions(entries),
        "edges": critique_edges(entries),
        "architect": architect(entries),
        "events": [event_json(e) for e in entries],
    }


def calls(entries: Sequence[TimelineEntry]) -> list[JsonObject]:
    """Every agent call that left an event, in order: the timeline per round.

    A call's end is its event's time and its start that less its latency; a failure (timeouts
    and retries exhausted included, the error says which) has no latency of its own.
    """
    out = []
    for e in entries:
        if e.type == "TimedOut":  # the calls still out when the deadline passed
            out += [_timed_out(e, str(agent)) for agent in e.data.get("missing") or []]
        kind = _CALLS.get(e.type)
        if kind is None:
            continue
        data = e.data
        latency = int(data.get("latency_ms") or 0)
        out.append(
            {
                "version": e.version,
                "kind": kind,
                "agent_id": str(data.get("agent_id", "")),
                "round": int(data.get("round", -1) if data.get("round") is not None else -1),
                "end": iso(e.at),
                "latency_ms": latency,
                "tokens": int(data.get("tokens") or 0),
                "model": str(data.get("model", "")),
                "error": str(data.get("error", "")),
                "thinking_retried": bool(data.get("thinking_retried", False)),
                "prompt_tokens": int(data.get("prompt_tokens") or 0),
                "temperature": data.get("temperature"),
                "seed": data.get("seed"),
                "persona": str(data.get("persona") or ""),
                "attempts": int(data["attempts"]) if data.get("attempts") else None,
                "has_prompt": bool(data.get("prompt")),
                "reviews": _reviews(data),
            }
        )
    return out


def _reviews(data: Mapping[str, Any]) -> list[JsonObject]:
    """A critique's or rating's answer, as the reviews it held."""
    out = []
    for r in data.get("reviews") or []:
        if isinstance(r, Mapping):
            score = r.get("score")
            out.append(
                {
                    "target": str(r.get("target", "")),
                    "score": float(score) if isinstance(score, int | float) else None,
                    "text": str(r.get("text", "")),
                }
            )
    return out


def _timed_out(e: TimelineEntry, agent: str) -> JsonObject:
    return {
        "version": e.version,
        "kind": "timeout",
        "agent_id": agent,
        "round": -1,
        "end": iso(e.at),
        "latency_ms": 0,
        "tokens": 0,
        "model": "",
        "error": "no answer by the deadline",
        "thinking_retried": False,
        "prompt_tokens": 0,
        "temperature": None,
        "seed": None,
        "persona": "",
        "attempts": None,
        "has_prompt": False,
        "reviews": [],
    }


def revisions(entries: Sequence[TimelineEntry]) -> list[JsonObject]:
    """Each proposal and revision, with its line diff against the same agent's previous one."""
    previous: dict[str, str] = {}
    out = []
    for e in entries:
        if e.type not in _PROPOSALS:
            continue
        agent = str(e.data.get("agent_id", ""))
        content = str(e.data.get("content", ""))
        before = previous.get(agent)
        previous[agent] = content
        out.append(
            {
                "version": e.version,
                "agent_id": agent,
                "round": int(e.data.get("round", 0)),
                "revised": e.type == "ProposalRevised",
                "addressed": [str(a) for a in e.data.get("addressed") or []],
                "content": content,
                "diff": None if before is None else line_diff(before, content),
            }
        )
    return out


def line_diff(before: str, after: str) -> list[str]:
    """A unified diff of two texts, line by line (no file headers), cut at ``MAX_DIFF_LINES``."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))[
        2:
    ]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines"]
    return lines


def critique_edges(entries: Sequence[TimelineEntry]) -> list[JsonObject]:
    """Who reviewed whom, how hard: one edge per review (critiques by round, final ratings)."""
    out = []
    for e in entries:
        kind = _REVIEWS.get(e.type)
        if kind is None:
            continue
        source = str(e.data.get("agent_id", ""))
        for r in e.data.get("reviews") or []:
            if not isinstance(r, Mapping):
                continue
            score = r.get("score")
            out.append(
                {
                    "kind": kind,
                    "from": str(r.get("reviewer") or source),
                    "to": str(r.get("target", "")),
                    "score": float(score) if isinstance(score, int | float) else None,
                    "text": str(r.get("text", "")),
                    "round": e.data.get("round"),
                }
            )
    return out


def architect(entries: Sequence[TimelineEntry]) -> JsonObject | None:
    """The architect's choice, when the protocol recorded one (the last such event wins)."""
    found = None
    for e in entries:
        if "Architect" in e.type:
            found = {"type": e.type, "version": e.version, **_plain(e.data)}
    return found


def plain_dataclass(value: DataclassInstance) -> JsonObject:
    """A read model's frozen dataclass (a council, say) as JSON data, whatever fields it has."""
    out = _plain(dataclasses.asdict(value))
    assert isinstance(out, dict)
    return out


def plain(value: object) -> object:
    """``value`` with only JSON types in it (see ``_plain``)."""
    return _plain(value)


def _plain(value: object) -> Any:
    """``value`` with only JSON types in it (times as ISO text, anything else as its str).

    Returns ``Any``: the JSON mirrors ``value``'s shape, and callers read it as what they passed.
    """
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
