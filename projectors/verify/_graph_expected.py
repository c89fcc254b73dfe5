"""The graph as it should be: the records the statements write for a deliberation's first events,
from its replay and from what the events say that the aggregate does not keep."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aggregates import AgentId, Deliberation, DeliberationStatus
from projectors.verify._graph_read import P_FIELDS, Side
from projectors.verify._log_scan import History, Record


def expected_graph(history: History, version: int) -> Side:
    """The records the statements must have written for the first ``version`` events."""
    d = history.replay(version)
    d_id = str(d.id)
    side: Side = {"Deliberation": _expected_node(d)}
    for (agent, round_no), p in sorted(d.proposals.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        checks = [c.as_dict() for c in p.checks] if p.score is not None else None
        values = (round_no, p.content, p.model, p.tokens, p.latency_ms, False, _at(p.received_at))
        side[f"Proposal[{round_no}:{agent}]"] = _proposal(d_id, agent, *values, p.score, checks)
    critique_at: dict[tuple[str, int], str] = {}
    rated_at: dict[str, str] = {}
    for v, (e, seq) in enumerate(zip(history.events[:version], history.positions, strict=False), 1):
        detail = getattr(e, "error", None) or getattr(e, "reason", None) or ""
        side[f"Event[{v}]"] = {
            "seq": seq, "type": type(e).__name__, "at": _at(e.timestamp), "version": v,
            "agent_id": str(getattr(e, "agent_id", None) or ""), "detail": str(detail),
            "<-HAD_EVENT": [d_id],
        }  # fmt: skip
        if isinstance(e, Deliberation.LateProposalReceived):
            late = (e.content, e.model, None, None, True, _at(e.timestamp), None, None)
            key = f"Proposal[{e.round}:{e.agent_id}:late:{v}]"
            side[key] = _proposal(d_id, e.agent_id, e.round, *late)
        elif isinstance(e, Deliberation.CritiqueReceived):
            critique_at[(e.agent_id, e.round)] = _at(e.timestamp)
        elif isinstance(e, Deliberation.PeerRatingsReceived):
            rated_at[e.agent_id] = _at(e.timestamp)
        elif isinstance(e, Deliberation.ArchitectSelected) and e.architect_id:
            chosen = d.final_proposals().get(AgentId(e.winner))
            if chosen is not None:
                key = f"SELECTED[{e.architect_id} -> {chosen.round}:{e.winner}]"
                side[key] = {
                    "rationale": e.rationale, "candidates": list(e.candidates),
                    "model": e.model, "latency_ms": e.latency_ms, "at": _at(e.timestamp),
                }  # fmt: skip
    for (critic, round_no), reviews in sorted(d.critiques.items()):
        reviewed = round_no - 1
        for rv in reviews:
            if (rv.reviewer, reviewed) in d.proposals and (rv.target, reviewed) in d.proposals:
                side[f"CRITIQUED[{reviewed}:{rv.reviewer} -> {reviewed}:{rv.target}]"] = {
                    "round": round_no, "critic": rv.reviewer, "content": rv.text,
                    "rating": rv.score, "at": critique_at.get((critic, round_no)),
                }  # fmt: skip
    final = d.final_proposals()
    for rater, ratings in sorted(d.ratings.items()):
        for rv in ratings:
            rated = final.get(AgentId(rv.target))
            if rated is not None:
                _add(side, f"RATED[{rv.reviewer} -> {rated.round}:{rv.target}]", {
                    "score": rv.score, "content": rv.text, "source": rv.source,
                    "at": rated_at.get(rater),
                })  # fmt: skip
    return side


def _add(side: Side, key: str, record: Record) -> None:
    """As the graph's reader does: ``key #2``… for a second link between the same nodes."""
    n, unique = 1, key
    while unique in side:
        n += 1
        unique = f"{key} #{n}"
    side[unique] = record


def _expected_node(d: Deliberation) -> Record:
    """The Deliberation node: properties a later event sets are absent (null) until it lands."""
    status = d.status
    final = d.final_proposals()
    return {
        "task_id": d.task_id, "task": d.task, "role": d.role.value, "status": status.value,
        "num_agents": d.num_agents, "rounds": d.rounds, "deadline": _at(d.deadline),
        "plan_id": d.plan_id, "story_id": d.story_id, "requested_by": d.requested_by,
        "created_at": _at(d.created_on), "updated_at": _at(d.modified_on),
        "finished_at": _at(d.finished_at) if d.finished_at else None, "version": d.version,
        "winner": d.winner, "ranking": list(d.ranking) if d.winner else None,
        "missing": list(d.missing) if status is DeliberationStatus.TIMEOUT else None,
        "reason": d.reason if status in _CLOSED_WITH_REASON else None,
        "architect_fallback": d.architect_fallback or None,
        "<-SPAWNED": [d.plan_id] if d.plan_id else [],
        "WON_BY->": [f"{final[d.winner].round}:{d.winner}"] if d.winner in final else [],
    }  # fmt: skip


_CLOSED_WITH_REASON = (DeliberationStatus.FAILED, DeliberationStatus.CANCELLED)


def _proposal(d_id: str, agent: str, *values: Any) -> Record:
    record = dict(zip(P_FIELDS, (d_id, agent, *values), strict=True))
    record.update({"<-HAS_PROPOSAL": [d_id], "<-PROPOSED": [agent]})
    return record


def _at(t: datetime) -> str:
    return t.isoformat()
