"""The graph's vocabulary and the Cypher that writes it: one set of statements for every adapter.

Model (labels and relationship types below are the contract users write Cypher against)::

    (:Plan {id, story_id})-[:SPAWNED]->(:Deliberation {id, task_id, role, status, task, ...})
    (:Agent {id, role, model})-[:PROPOSED]->(:Proposal {id, round, content, score, late, ...})
    (:Deliberation)-[:HAS_PROPOSAL]->(:Proposal)      (:Deliberation)-[:WON_BY]->(:Proposal)
    (:Deliberation)-[:HAD_EVENT]->(:Event {id, seq, type, at, version, agent_id, detail})

Statements stay in the subset both Neo4j 5 and LadybugDB accept: ``MERGE`` on the key property
only, ``SET`` for the rest, ``MATCH ... MERGE`` for relationships, parameters for every value, no
map projections, no APOC. Times are ISO-8601 UTC strings (they sort as text, and both engines
take them without a temporal type mapping). Every statement is idempotent, so re-applying an
event (which the position check already prevents) would still change nothing.

Pure: building statements does no I/O. The adapters run them in one transaction with the position.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import singledispatch
from typing import Any

from aggregates import Deliberation
from projectors.events import is_deliberation_event

__all__ = [
    "NODE_LABELS",
    "REL_TYPES",
    "Statement",
    "proposal_id",
    "statements_for",
]

NODE_LABELS = ("Plan", "Deliberation", "Agent", "Proposal", "Event", "Projection")
REL_TYPES = ("SPAWNED", "HAS_PROPOSAL", "PROPOSED", "WON_BY", "HAD_EVENT")


@dataclass(frozen=True)
class Statement:
    """One parameterised Cypher statement."""

    cypher: str
    params: Mapping[str, Any] = field(default_factory=dict)


def proposal_id(deliberation_id: object, round_no: int, agent_id: str) -> str:
    """``<deliberation_id>:<round>:<agent_id>``: one proposal per agent and round."""
    return f"{deliberation_id}:{round_no}:{agent_id}"


def _at(t: datetime) -> str:
    return t.isoformat()


# ---------------------------------------------------------------- position (every adapter)

READ_POSITION = "MATCH (x:Projection {name: $name}) RETURN x.position AS position"
WRITE_POSITION = "MERGE (x:Projection {name: $name}) SET x.position = $position"

# ---------------------------------------------------------------- deliberation

_REQUESTED = """
MERGE (d:Deliberation {id: $id})
SET d.task_id = $task_id, d.task = $task, d.role = $role, d.status = $status,
    d.num_agents = $num_agents, d.rounds = $rounds, d.deadline = $deadline,
    d.plan_id = $plan_id, d.story_id = $story_id, d.requested_by = $requested_by,
    d.created_at = $at
"""
_PLAN = "MERGE (p:Plan {id: $plan_id}) SET p.story_id = $story_id"
_SPAWNED = """
MATCH (p:Plan {id: $plan_id}), (d:Deliberation {id: $id})
MERGE (p)-[:SPAWNED]->(d)
"""
_STATUS = "MATCH (d:Deliberation {id: $id}) SET d.status = $status"
_TOUCH = "MATCH (d:Deliberation {id: $id}) SET d.version = $version, d.updated_at = $at"
_AGENT = """
MATCH (d:Deliberation {id: $id})
MERGE (a:Agent {id: $agent_id})
SET a.role = d.role
"""
_AGENT_MODEL = "MATCH (a:Agent {id: $agent_id}) SET a.model = $model"
_PROPOSAL = """
MERGE (p:Proposal {id: $proposal_id})
SET p.deliberation_id = $id, p.agent_id = $agent_id, p.round = $round, p.content = $content,
    p.model = $model, p.tokens = $tokens, p.latency_ms = $latency_ms, p.late = false,
    p.received_at = $at
"""
_LATE_PROPOSAL = """
MERGE (p:Proposal {id: $proposal_id})
SET p.deliberation_id = $id, p.agent_id = $agent_id, p.round = $round, p.content = $content,
    p.model = $model, p.late = true, p.received_at = $at
"""
_HAS_PROPOSAL = """
MATCH (d:Deliberation {id: $id}), (p:Proposal {id: $proposal_id})
MERGE (d)-[:HAS_PROPOSAL]->(p)
"""
_PROPOSED = """
MATCH (a:Agent {id: $agent_id}), (p:Proposal {id: $proposal_id})
MERGE (a)-[:PROPOSED]->(p)
"""
# The aggregate scores an agent's final proposal: its on-time one with the highest round.
_SCORED = """
MATCH (d:Deliberation {id: $id})-[:HAS_PROPOSAL]->(p:Proposal)
WHERE p.agent_id = $agent_id AND p.late = false
WITH p ORDER BY p.round DESC LIMIT 1
SET p.score = $score, p.checks = $checks
"""
_COMPLETED = """
MATCH (d:Deliberation {id: $id})
SET d.status = $status, d.winner = $winner, d.ranking = $ranking, d.finished_at = $at
"""
_WON_BY = """
MATCH (d:Deliberation {id: $id})-[:HAS_PROPOSAL]->(p:Proposal)
WHERE p.agent_id = $winner AND p.late = false
WITH d, p ORDER BY p.round DESC LIMIT 1
MERGE (d)-[:WON_BY]->(p)
"""
_TIMED_OUT = """
MATCH (d:Deliberation {id: $id})
SET d.status = $status, d.missing = $missing, d.finished_at = $at
"""
_CLOSED = """
MATCH (d:Deliberation {id: $id})
SET d.status = $status, d.reason = $reason, d.finished_at = $at
"""
_EVENT = """
MERGE (e:Event {id: $event_id})
SET e.seq = $seq, e.type = $type, e.at = $at, e.version = $version,
    e.agent_id = $agent_id, e.detail = $detail
"""
_HAD_EVENT = """
MATCH (d:Deliberation {id: $id}), (e:Event {id: $event_id})
MERGE (d)-[:HAD_EVENT]->(e)
"""


def statements_for(event: object, position: int) -> list[Statement]:
    """The statements that project ``event`` (found at ``position``); [] when it is not ours.

    Every Deliberation event, known or not, also bumps the node's version and lands on its
    timeline, so the timeline is complete even before the graph learns a new event's meaning.
    """
    if not is_deliberation_event(event):
        return []
    e: Any = event
    base = {"id": str(e.originator_id), "at": _at(e.timestamp)}
    body = _statements(event, base)
    detail = getattr(e, "error", None) or getattr(e, "reason", None) or ""
    timeline = {
        **base,
        "event_id": f"{e.originator_id}:{e.originator_version}",
        "seq": position,
        "type": type(event).__name__,
        "version": e.originator_version,
        "agent_id": getattr(e, "agent_id", None) or "",
        "detail": detail,
    }
    return [
        *body,
        Statement(_TOUCH, {**base, "version": e.originator_version}),
        Statement(_EVENT, timeline),
        Statement(_HAD_EVENT, timeline),
    ]


@singledispatch
def _statements(event: object, base: dict[str, Any]) -> list[Statement]:
    return []  # a Deliberation event the graph does not model yet: timeline only


@_statements.register
def _(e: Deliberation.Requested, base: dict[str, Any]) -> list[Statement]:
    params = {
        **base,
        "task_id": e.task_id,
        "task": e.task,
        "role": e.role,
        "status": "PENDING",
        "num_agents": e.num_agents,
        "rounds": e.rounds,
        "deadline": _at(e.deadline),
        "plan_id": e.plan_id,
        "story_id": e.story_id,
        "requested_by": e.requested_by,
    }
    out = [Statement(_REQUESTED, params)]
    if e.plan_id:
        plan = {"id": base["id"], "plan_id": e.plan_id, "story_id": e.story_id}
        out += [Statement(_PLAN, plan), Statement(_SPAWNED, plan)]
    return out


@_statements.register
def _(e: Deliberation.Started, base: dict[str, Any]) -> list[Statement]:
    out = [Statement(_STATUS, {"id": base["id"], "status": "IN_PROGRESS"})]
    out += [Statement(_AGENT, {"id": base["id"], "agent_id": a}) for a in e.agents]
    return out


@_statements.register
def _(e: Deliberation.ProposalReceived, base: dict[str, Any]) -> list[Statement]:
    pid = proposal_id(base["id"], e.round, e.agent_id)
    params = {
        **base,
        "proposal_id": pid,
        "agent_id": e.agent_id,
        "round": e.round,
        "content": e.content,
        "model": e.model,
        "tokens": e.tokens,
        "latency_ms": e.latency_ms,
    }
    return [
        Statement(_STATUS, {"id": base["id"], "status": "IN_PROGRESS"}),
        Statement(_AGENT, {"id": base["id"], "agent_id": e.agent_id}),
        Statement(_AGENT_MODEL, {"agent_id": e.agent_id, "model": e.model}),
        Statement(_PROPOSAL, params),
        Statement(_HAS_PROPOSAL, params),
        Statement(_PROPOSED, params),
    ]


@_statements.register
def _(e: Deliberation.LateProposalReceived, base: dict[str, Any]) -> list[Statement]:
    # Its own node: the agent may already have an on-time proposal for the same round.
    pid = f"{proposal_id(base['id'], e.round, e.agent_id)}:late:{e.originator_version}"
    params = {
        **base,
        "proposal_id": pid,
        "agent_id": e.agent_id,
        "round": e.round,
        "content": e.content,
        "model": e.model,
    }
    return [
        Statement(_AGENT, {"id": base["id"], "agent_id": e.agent_id}),
        Statement(_LATE_PROPOSAL, params),
        Statement(_HAS_PROPOSAL, params),
        Statement(_PROPOSED, params),
    ]


@_statements.register
def _(e: Deliberation.AgentFailed, base: dict[str, Any]) -> list[Statement]:
    return [
        Statement(_STATUS, {"id": base["id"], "status": "IN_PROGRESS"}),
        Statement(_AGENT, {"id": base["id"], "agent_id": e.agent_id}),
    ]


@_statements.register
def _(e: Deliberation.ProposalScored, base: dict[str, Any]) -> list[Statement]:
    params = {
        "id": base["id"],
        "agent_id": e.agent_id,
        "score": float(e.score),
        "checks": json.dumps(e.checks, sort_keys=True),
    }
    return [Statement(_SCORED, params)]


@_statements.register
def _(e: Deliberation.Completed, base: dict[str, Any]) -> list[Statement]:
    params = {**base, "status": "COMPLETED", "winner": e.winner, "ranking": list(e.ranking)}
    return [Statement(_COMPLETED, params), Statement(_WON_BY, params)]


@_statements.register
def _(e: Deliberation.TimedOut, base: dict[str, Any]) -> list[Statement]:
    return [Statement(_TIMED_OUT, {**base, "status": "TIMEOUT", "missing": list(e.missing)})]


@_statements.register
def _(e: Deliberation.Failed, base: dict[str, Any]) -> list[Statement]:
    return [Statement(_CLOSED, {**base, "status": "FAILED", "reason": e.reason})]


@_statements.register
def _(e: Deliberation.Cancelled, base: dict[str, Any]) -> list[Statement]:
    return [Statement(_CLOSED, {**base, "status": "CANCELLED", "reason": e.reason})]
