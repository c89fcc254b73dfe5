"""The invariants, judged from what the stream holds.

Each check returns a ``Verdict`` naming every violation it found (task id, agent, round and
what was recorded), so a failed run says where to look, not only that something is wrong.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aggregates import Deliberation
from bench.soak._chaos import Fault
from bench.soak._load import Submission
from bench.soak._stream import Histories, History, StoredAnswers

_SHOWN = 12
"""Violations listed per verdict (the count is always complete)."""


@dataclass
class Verdict:
    name: str
    ok: bool
    summary: str
    violations: list[str] = field(default_factory=list)


def _verdict(name: str, summary: str, violations: Sequence[str]) -> Verdict:
    return Verdict(name, not violations, summary, list(violations))


def acknowledged_were_requested(subs: Sequence[Submission], histories: Histories) -> Verdict:
    requested = {h.task_id for h in histories.values()}
    acked = [s for s in subs if s.acked_at is not None]
    lost = [
        f"{s.task_id}: acknowledged, no Requested event"
        for s in acked
        if s.task_id not in requested
    ]
    summary = f"{len(acked)} acknowledged, {len(requested)} in the stream"
    return _verdict("no acknowledged submission lost", summary, lost)


def every_submission_acknowledged(subs: Sequence[Submission]) -> Verdict:
    never = [
        f"{s.task_id}: {s.attempts} attempts, last {s.last_error}"
        for s in subs
        if s.acked_at is None
    ]
    retried = sum(1 for s in subs if s.attempts > 1)
    summary = f"{len(subs) - len(never)} of {len(subs)}; {retried} needed a retry"
    return _verdict("every submission acknowledged (retrying)", summary, never)


def _answers(history: History) -> Iterable[tuple[str, tuple[Any, ...]]]:
    """What the protocol records at most once: (what, key) per event."""
    for e in history.events:
        if isinstance(e, Deliberation.ProposalReceived | Deliberation.AgentFailed):
            yield "answer", (e.agent_id, e.round)  # revisions are ProposalReceived too
        elif isinstance(e, Deliberation.CritiqueReceived):
            yield "critique", (e.agent_id, e.round)
        elif isinstance(e, Deliberation.PeerRatingsReceived):
            yield "rating", (e.agent_id,)
        elif isinstance(e, Deliberation.ProposalScored):
            yield "score", (e.agent_id,)


def one_answer_each(histories: Histories) -> Verdict:
    doubled: list[str] = []
    answers = 0
    for h in histories.values():
        counts = collections.Counter(_answers(h))
        answers += sum(1 for what, _ in counts if what == "answer")
        for (what, key), n in counts.items():
            if n > 1:
                doubled.append(f"{h.task_id}: {what} {key} recorded {n} times")
    summary = f"{answers} (agent, round) answers"
    return _verdict("no duplicate answer per (deliberation, agent, round)", summary, doubled)


def no_false_failures(histories: Histories, stored: StoredAnswers) -> Verdict:
    """An agent recorded as failed whose answer a worker had stored: the answer was lost."""
    rated = {(d, a) for d, purpose, _r, a in stored.reviews if purpose == "rate"}
    false: list[str] = []
    failed = 0
    for d_id, h in histories.items():
        d = str(d_id)
        for e in h.events:
            if isinstance(e, Deliberation.AgentFailed):
                failed += 1
                if (d, e.round, e.agent_id) in stored.turns:
                    false.append(
                        f"{h.task_id}: {e.agent_id} round {e.round} failed ({e.error}); "
                        "its answer was stored"
                    )
            elif isinstance(e, Deliberation.CritiqueReceived) and e.error:
                failed += 1
                if (d, "critique", e.round, e.agent_id) in stored.reviews:
                    false.append(
                        f"{h.task_id}: {e.agent_id} critique round {e.round} failed "
                        f"({e.error}); it was stored"
                    )
            elif isinstance(e, Deliberation.PeerRatingsReceived) and e.error:
                failed += 1
                if (d, e.agent_id) in rated:
                    false.append(
                        f"{h.task_id}: {e.agent_id} rating failed ({e.error}); it was stored"
                    )
    summary = f"{failed} failed calls recorded, {stored.messages} results stored"
    return _verdict("no AgentFailed (or failed review) where an answer was stored", summary, false)


def nothing_after_terminal(histories: Histories) -> Verdict:
    changed: list[str] = []
    for h in histories.values():
        terminal = h.terminal
        if terminal is None:
            continue
        after = h.events[h.events.index(terminal) + 1 :]
        for e in after:
            if not isinstance(e, Deliberation.LateProposalReceived):
                changed.append(f"{h.task_id}: {type(e).__name__} after {type(terminal).__name__}")
    late = sum(
        isinstance(e, Deliberation.LateProposalReceived)
        for h in histories.values()
        for e in h.events
    )
    summary = f"{late} late answers recorded as late"
    return _verdict("no status change after a terminal event", summary, changed)


def all_terminal(histories: Histories) -> Verdict:
    by = collections.Counter(
        type(h.terminal).__name__ if h.terminal is not None else "open" for h in histories.values()
    )
    still = [
        f"{h.task_id}: last event {type(h.events[-1]).__name__}"
        for h in histories.values()
        if h.terminal is None
    ]
    summary = ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
    return _verdict("every deliberation reached a terminal state", summary, still)


def verify_clean(rc: int | None, report: dict[str, Any] | None, error: str) -> Verdict:
    if report is None:
        return _verdict("fleet verify clean", "did not run", [error or f"exit {rc}"])
    diffs = [
        f"{d['task_id'] or d['deliberation_id']}: {d['projection']} {d['detail']}"
        for d in report.get("differences", [])
    ]
    if rc != 0 and not diffs:
        diffs = [f"exit {rc}: {error}"]
    compared = set(report.get("positions", {}))
    if not {"graph", "cache"} <= compared:  # "clean" over nothing is not clean
        diffs.append(f"compared only {sorted(compared)}, not the graph and the cache")
    summary = (
        f"{report.get('deliberations')} replayed to {report.get('stream_head')}, "
        f"positions {report.get('positions')}"
    )
    return _verdict("fleet verify clean", summary, diffs)


def graph_count(
    count: int | None, subs: Sequence[Submission], histories: Histories, error: str
) -> Verdict:
    stream = len(histories)
    summary = f"graph {count}, stream {stream}, submissions {len(subs)}"
    wrong = [] if count == stream == len(subs) else [error or summary]
    return _verdict("graph deliberation count = submissions", summary, wrong)


def everyone_came_back(faults: Sequence[Fault]) -> Verdict:
    lost = [f"{f.member} ({f.cause} at {f.at:.0f})" for f in faults if f.ready_at is None]
    return _verdict("every process came back", f"{len(faults)} restarts", lost)


_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\S*")


def failures(histories: Histories) -> list[tuple[str, str, int]]:
    """What the events say failed, and why: (event, reason with ids elided, count), most
    frequent first. Not a verdict: an agent may fail for a reason of its own; read with the
    faults above."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    for h in histories.values():
        for e in h.events:
            reason = ""
            if isinstance(e, Deliberation.AgentFailed):
                reason = e.error
            elif isinstance(e, Deliberation.CritiqueReceived | Deliberation.PeerRatingsReceived):
                reason = e.error
            elif isinstance(e, Deliberation.Failed):
                reason = e.reason
            elif isinstance(e, Deliberation.TimedOut):
                reason = f"{len(e.missing)} agents missing"
            else:
                continue
            if reason:
                seen[(type(e).__name__, _ID.sub("<id>", reason)[:160])] += 1
    return [(what, why, n) for (what, why), n in seen.most_common()]
