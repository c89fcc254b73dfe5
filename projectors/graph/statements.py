"""The graph's vocabulary and the Cypher that writes it: one set of statements for every adapter.

Model (labels and relationship types below are the contract users write Cypher against)::

    (:Plan {id, story_id})-[:SPAWNED]->(:Deliberation {id, task_id, role, status, task, ...})
    (:Agent {id, role, model})-[:PROPOSED]->(:Proposal {id, round, content, score, late, ...})
    (:Deliberation)-[:HAS_PROPOSAL]->(:Proposal)      (:Deliberation)-[:WON_BY]->(:Proposal)
    (:Deliberation)-[:HAD_EVENT]->(:Event {id, seq, type, at, version, agent_id, detail})
    (:Council {id, role, status, model, endpoint, rounds, version, updated_at})
    (:Agent)-[:MEMBER_OF {since, until, model, endpoint}]->(:Council)   one link per membership
    (:Council)-[:CONVENED {version}]->(:Deliberation)     the council a deliberation started with
    (:Agent)-[:SAT_IN {seat}]->(:Deliberation)            the member in each of its seats
    (:Story {id, phase})-[:HAS_PLAN]->(:Plan)    (:Story)-[:HAS_DELIBERATION]->(:Deliberation)
    (:Story)-[:CHANGED_PHASE]->(:PhaseChange {id, seq, from_phase, to_phase, at})

Decisions (who decided what, and why)::

    (:Plan {id, story_id, approved_by, approved_at, roles, description, tasks})
        from its approval on, before any deliberation of it; (:Story)-[:HAS_PLAN]->(:Plan)
    (:Agent)-[:SELECTED {deliberation_id, rationale, candidates, model, latency_ms, at}]
        ->(:Proposal)
        the architect's choice of the winner among the candidates, and why
    (:Deliberation {architect_fallback})   why the highest score won instead (no architect choice)
    (:Agent)-[:RATED {deliberation_id, score, content, source, at}]->(:Proposal)
        each agent's final rating of a peer's final proposal (the peer part of the score)

Statements stay in the subset both Neo4j 5 and LadybugDB accept: ``CREATE`` with a property map,
``MERGE`` on the key property only, ``SET`` for the rest, one ``MATCH`` per node, parameters for
every value, no map projections, no APOC. Times are ISO-8601 UTC strings (they sort as text, and
both engines take them without a temporal type mapping).

What an event introduces (its Deliberation, Proposal, Event node and their links) is ``CREATE``d:
each event's statements run exactly once, because the position check is in the same transaction,
and a bug that re-applied one would fail loudly on the key (primary key; uniqueness constraint)
instead of passing silently. ``CREATE`` is also what keeps catch-up fast on LadybugDB, whose
``UNWIND … MERGE`` scans the table instead of using the key's index (measured: ~50 ms against
~3 ms for 55 rows on a 100,000-node table). Shared nodes (Agent, Plan) are ``MERGE``d.

Pure: building statements does no I/O. The adapters run them in one transaction with the position.

Over 400 lines on purpose: one vocabulary. Each event's Cypher and the handler that fills its rows
(and names what they read and write for ``projectors.graph.batch``) are read and changed together,
and both adapters take the whole vocabulary, the ``Projection`` node's statements included, from
this one place.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import singledispatch
from typing import NamedTuple, TypedDict

from eventsourcing.domain import DomainEvent

from aggregates import Council, Deliberation, Plan, Role, council_id
from aggregates.story import Story
from aggregates.values import MAX_ROUNDS
from application.ports import CypherParams
from projectors.events import is_council_event, is_deliberation_event

__all__ = [
    "LAST",
    "NODE_LABELS",
    "ORDERED",
    "READ_POSITION",
    "RELEASE",
    "REL_TYPES",
    "SAME",
    "VOCABULARY",
    "WRITE_CLAIM",
    "WRITE_POSITION",
    "Statement",
    "candidate_ids",
    "proposal_id",
    "statements_for",
]

NODE_LABELS = (
    "Plan", "Deliberation", "Agent", "Proposal", "Event", "Council", "Story", "PhaseChange",
    "Projection",
)  # fmt: skip
REL_TYPES = (
    "SPAWNED", "HAS_PROPOSAL", "PROPOSED", "WON_BY", "HAD_EVENT", "CRITIQUED", "MEMBER_OF",
    "CONVENED", "SAT_IN", "HAS_PLAN", "HAS_DELIBERATION", "CHANGED_PHASE", "SELECTED", "RATED",
)  # fmt: skip


ORDERED = "ordered"
"""Batch rule: rows keep their order per deliberation; one row per node in a batched statement."""
SAME = "same"
"""Batch rule: rows write the same values (a MERGEd link, a constant property): repeats are fine."""
LAST = "last"
"""Batch rule: only the last row per node matters (nothing reads the value in the same batch)."""


class Statement(NamedTuple):
    """One parameterised Cypher statement over ``UNWIND $rows AS r``, with one row's values.

    ``reads``, ``writes`` and ``policy`` tell ``projectors.graph.batch`` how rows of many events
    may share one execution and in which order; ``node`` keys a LAST row's reduction.

    A named tuple, not a frozen dataclass: a catch-up makes six per event, and a frozen
    dataclass's ``__init__`` (one ``object.__setattr__`` per field) cost twice the time.
    """

    cypher: str
    params: CypherParams
    node: str = ""
    policy: str = ORDERED
    reads: tuple[str, ...] = ()
    """What the row's result depends on (keys such as ``d:<id>``, ``props:<id>:<agent>``)."""
    writes: tuple[str, ...] = ()
    """What the row changes. A row that names neither is ordered after every row before it."""


def proposal_id(deliberation_id: object, round_no: int, agent_id: str) -> str:
    """``<deliberation_id>:<round>:<agent_id>``: one proposal per agent and round."""
    return f"{deliberation_id}:{round_no}:{agent_id}"


def candidate_ids(deliberation_id: object, agent_id: str) -> list[str]:
    """The keys an agent's on-time proposals can have: one per round the aggregate allows.

    Rounds run from 0 to ``rounds - 1`` and ``rounds`` is at most ``MAX_ROUNDS`` (checked when a
    deliberation is requested); ``_ROUND_KEYS`` keeps a margin so that lowering the limit later
    still finds the proposals of deliberations recorded under the old one.
    """
    # proposal_id's format, inlined: two of these per deliberation event in a catch-up
    return [f"{deliberation_id}:{k}:{agent_id}" for k in range(_ROUND_KEYS)]


_ROUND_KEYS = max(MAX_ROUNDS, 10)


class _Base(TypedDict):
    """What every row of one event's statements starts with: the aggregate's id, the time."""

    id: str
    at: str


def _at(t: datetime) -> str:
    return t.isoformat()


# ---------------------------------------------------------------- position (every adapter)

# The Projection node holds the position and the fencing state: ``epoch`` grows by one with each
# new owner; a writer whose epoch is not the stored one has been fenced out. ``lease_until`` (ms
# since the epoch, writer's clock) lets a standby take over from an owner that went quiet.
READ_POSITION = """
MATCH (x:Projection {name: $name})
RETURN x.position AS position, x.epoch AS epoch, x.owner AS owner, x.lease_until AS lease_until
"""
WRITE_POSITION = """
MERGE (x:Projection {name: $name})
SET x.position = $position, x.lease_until = $lease_until
"""
WRITE_CLAIM = """
MERGE (x:Projection {name: $name})
SET x.owner = $owner, x.epoch = $epoch, x.lease_until = $lease_until,
    x.position = coalesce(x.position, 0)
"""
RELEASE = """
MATCH (x:Projection {name: $name}) WHERE x.owner = $owner SET x.lease_until = 0
"""

# ---------------------------------------------------------------- deliberation
#
# Every data statement reads its values from one row ``r`` of ``$rows``: one event runs each with
# a one-row list, a catch-up batch runs each with many rows (see ``projectors.graph.batch``). So a
# statement must be correct row by row: no ORDER BY/LIMIT over the whole input, values used
# after a WITH are carried by name, and grouping keys are values (LadybugDB cannot group by node).
# Two nodes are matched in two MATCH clauses, not one comma-joined pattern: LadybugDB plans the
# latter as a join of two scans (a second per batch on a large graph), the former as two key
# lookups.

_REQUESTED = """
UNWIND $rows AS r
CREATE (d:Deliberation {id: r.id, task_id: r.task_id, task: r.task, role: r.role,
    status: r.status, num_agents: r.num_agents, rounds: r.rounds, deadline: r.deadline,
    plan_id: r.plan_id, story_id: r.story_id, requested_by: r.requested_by, created_at: r.at})
"""
_PLAN = "UNWIND $rows AS r MERGE (p:Plan {id: r.plan_id}) SET p.story_id = r.story_id"
_SPAWNED = """
UNWIND $rows AS r
MATCH (p:Plan {id: r.plan_id})
MATCH (d:Deliberation {id: r.id})
CREATE (p)-[:SPAWNED]->(d)
"""
_STATUS = "UNWIND $rows AS r MATCH (d:Deliberation {id: r.id}) SET d.status = r.status"
_TOUCH = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id}) SET d.version = r.version, d.updated_at = r.at
"""
_AGENT = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
MERGE (a:Agent {id: r.agent_id})
SET a.role = d.role
"""
_AGENT_MODEL = "UNWIND $rows AS r MATCH (a:Agent {id: r.agent_id}) SET a.model = r.model"
_PROPOSAL = """
UNWIND $rows AS r
CREATE (p:Proposal {id: r.proposal_id, deliberation_id: r.id, agent_id: r.agent_id,
    round: r.round, content: r.content, model: r.model, tokens: r.tokens,
    latency_ms: r.latency_ms, late: false, received_at: r.at})
"""
_LATE_PROPOSAL = """
UNWIND $rows AS r
CREATE (p:Proposal {id: r.proposal_id, deliberation_id: r.id, agent_id: r.agent_id,
    round: r.round, content: r.content, model: r.model, late: true, received_at: r.at})
"""
_HAS_PROPOSAL = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
MATCH (p:Proposal {id: r.proposal_id})
CREATE (d)-[:HAS_PROPOSAL]->(p)
"""
_PROPOSED = """
UNWIND $rows AS r
MATCH (a:Agent {id: r.agent_id})
MATCH (p:Proposal {id: r.proposal_id})
CREATE (a)-[:PROPOSED]->(p)
"""
# The aggregate scores an agent's final proposal: its on-time one with the highest round. The
# row names that agent's possible on-time proposals by key (``r.candidates``, one per round the
# aggregate allows), so both steps are primary-key lookups. A walk from the deliberation
# (``MATCH (d {id: r.id})-[:HAS_PROPOSAL]->(p)``) is what LadybugDB plans as a hash join over
# every proposal when ``d`` comes from ``UNWIND``: measured ~40 ms per execution on a
# 100,000-event graph, growing with it, against ~1.5 ms for the lookups. Late proposals have
# keys of their own (``…:late:<version>``), so no candidate names one.
_SCORED = """
UNWIND $rows AS r
UNWIND r.candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.late = false
WITH r.candidates AS candidates, r.score AS score, r.checks AS checks, max(p.round) AS top
UNWIND candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.round = top
SET p.score = score, p.checks = checks
"""
_COMPLETED = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
SET d.status = r.status, d.winner = r.winner, d.ranking = r.ranking, d.finished_at = r.at
"""
_WON_BY = """
UNWIND $rows AS r
UNWIND r.candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.late = false
WITH r.id AS id, r.candidates AS candidates, max(p.round) AS top
UNWIND candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.round = top
MATCH (d:Deliberation {id: id})
CREATE (d)-[:WON_BY]->(p)
"""
_TIMED_OUT = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
SET d.status = r.status, d.missing = r.missing, d.finished_at = r.at
"""
_CLOSED = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
SET d.status = r.status, d.reason = r.reason, d.finished_at = r.at
"""
_EVENT = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
CREATE (d)-[:HAD_EVENT]->(e:Event {id: r.event_id, seq: r.seq, type: r.type, at: r.at,
    version: r.version, agent_id: r.agent_id, detail: r.detail})
"""
# A peer's critique of a proposal: from the reviewer's proposal to the reviewed one, same round.
_CRITIQUED = """
UNWIND $rows AS r
MATCH (c:Proposal {id: r.critic_proposal_id})
MATCH (t:Proposal {id: r.target_proposal_id})
CREATE (c)-[:CRITIQUED {round: r.round, critic: r.critic, content: r.content, rating: r.rating,
    at: r.at}]->(t)
"""
# The same without a rating (the reviewer gave none: it stays null). A batch whose rows all had
# a null rating would make LadybugDB type the column STRING and refuse it against DOUBLE.
_CRITIQUED_UNRATED = """
UNWIND $rows AS r
MATCH (c:Proposal {id: r.critic_proposal_id})
MATCH (t:Proposal {id: r.target_proposal_id})
CREATE (c)-[:CRITIQUED {round: r.round, critic: r.critic, content: r.content, at: r.at}]->(t)
"""


# ---------------------------------------------------------------- stories
#
# A Story node is shared (MERGEd) by the deliberations and plans of one story and its phase
# changes: the planning service's story id is its key. Each phase change is a node of its own on
# the story (created once, like an Event), so the story's history reads in order by ``seq``.

_STORY = "UNWIND $rows AS r MERGE (s:Story {id: r.story_id})"
_STORY_DELIBERATION = """
UNWIND $rows AS r
MATCH (s:Story {id: r.story_id})
MATCH (d:Deliberation {id: r.id})
CREATE (s)-[:HAS_DELIBERATION]->(d)
"""
_STORY_PLAN = """
UNWIND $rows AS r
MATCH (s:Story {id: r.story_id})
MATCH (p:Plan {id: r.plan_id})
MERGE (s)-[:HAS_PLAN]->(p)
"""
_PHASE = "UNWIND $rows AS r MATCH (s:Story {id: r.story_id}) SET s.phase = r.to_phase"
_PHASE_CHANGE = """
UNWIND $rows AS r
MATCH (s:Story {id: r.story_id})
CREATE (s)-[:CHANGED_PHASE]->(c:PhaseChange {id: r.change_id, seq: r.seq,
    from_phase: r.from_phase, to_phase: r.to_phase, at: r.at})
"""


def _story_key(story_id: str) -> str:
    return f"story:{story_id}"


def _story_statements(e: Story.PhaseChanged, position: int) -> list[Statement]:
    """A phase change: the story (made if new), its current phase, the change on its history."""
    key = _story_key(e.story_id)
    row = {
        "story_id": e.story_id,
        "change_id": f"{e.originator_id}:{e.originator_version}",
        "seq": position,
        "from_phase": e.from_phase,
        "to_phase": e.to_phase,
        "at": _at(e.at),
    }
    return [
        _story(e.story_id),
        _row(_PHASE, row, node="story_id", writes=(key,)),
        _row(_PHASE_CHANGE, row, node="change_id", reads=(key,)),
    ]


def _story(story_id: str) -> Statement:
    """The story's MERGE, in one row shape whoever makes it (a phase change, a deliberation, a
    plan): rows of one statement share an execution in a batch, and LadybugDB binds them as
    one list type, refusing rows of different shapes."""
    row = {"story_id": story_id}
    return _row(_STORY, row, node="story_id", writes=(_story_key(story_id),), policy=SAME)


def _story_plan(story_id: str, plan_id: str) -> Statement:
    """The story's link to a plan, in one row shape whoever makes it (see ``_story``). MERGEd
    by each of the plan's deliberations and its approval: equal rows, SAME (one per batch)."""
    row = {"story_id": story_id, "plan_id": plan_id}
    link = f"has_plan:{story_id}:{plan_id}"
    reads = (_story_key(story_id), _plan(plan_id))
    return _row(_STORY_PLAN, row, node="plan_id", reads=reads, writes=(link,), policy=SAME)


def _story_links(e: Deliberation.Requested, d_id: str) -> list[Statement]:
    """A deliberation of a story: the story (made if new) links it, and the plan it came from."""
    key = _story_key(e.story_id)
    row = {"id": d_id, "story_id": e.story_id, "plan_id": e.plan_id}
    out = [
        _story(e.story_id),
        _row(_STORY_DELIBERATION, row, node="id", reads=(key, _d(d_id))),
    ]
    if e.plan_id:  # the Plan node is MERGEd just before (same event)
        out.append(_story_plan(e.story_id, e.plan_id))
    return out


def _row(
    cypher: str,
    params: CypherParams,
    *,
    node: str,
    reads: tuple[str, ...] = (),
    writes: tuple[str, ...] = (),
    policy: str = ORDERED,
) -> Statement:
    node_key = str(params.get(node, ""))
    return Statement(cypher, params, node=node_key, policy=policy, reads=reads, writes=writes)


# What a row reads and writes, for ``projectors.graph.batch``: a Deliberation node's existence
# and the properties fixed when it is created (``_d``), its changing state (status, winner,
# reason, ...: ``_state``), a Plan, an Agent, and an agent's proposals in one deliberation with
# their scores (``_props``). Event nodes and links are created once and read by nothing here.


def _d(d_id: str) -> str:
    return f"d:{d_id}"


def _state(d_id: str) -> str:
    return f"state:{d_id}"


def _plan(plan_id: str) -> str:
    return f"plan:{plan_id}"


def _agent_key(agent_id: str) -> str:
    return f"agent:{agent_id}"


def _props(d_id: str, agent_id: str) -> str:
    return f"props:{d_id}:{agent_id}"


def statements_for(event: object, position: int) -> list[Statement]:
    """The statements that project ``event`` (found at ``position``); [] when it is not ours.

    Every Deliberation event, known or not, also bumps the node's version and lands on its
    timeline, so the timeline is complete even before the graph learns a new event's meaning
    (an event class added to the aggregate later is projected as a timeline entry until a
    statement is registered for it below).
    """
    if is_council_event(event):
        return council_statements(event)
    if isinstance(event, Story.PhaseChanged):
        return _story_statements(event, position)
    if isinstance(event, Plan.Approved):
        return _plan_statements(event)
    if isinstance(event, Plan.RoleSkipped | Plan.NothingDispatched):
        return _plan_skipped_statements(event)
    if not is_deliberation_event(event):
        return []
    e = event
    base: _Base = {"id": str(e.originator_id), "at": _at(e.timestamp)}
    body = _statements(event, base)
    detail = getattr(e, "error", None) or getattr(e, "reason", None) or ""
    timeline = {
        **base,
        "event_id": f"{e.originator_id}:{e.originator_version}",
        "seq": position,
        "type": type(event).__name__,
        "version": e.originator_version,
        "agent_id": str(getattr(e, "agent_id", None) or ""),
        "detail": str(detail),
    }
    return [
        *body,
        _row(_TOUCH, {**base, "version": e.originator_version}, node="id", policy=LAST),
        _row(_EVENT, timeline, node="event_id", reads=(_d(base["id"]),)),
    ]


@singledispatch
def _statements(event: object, base: _Base) -> list[Statement]:
    return []  # a Deliberation event the graph does not model yet: timeline only


def _plan_skipped_statements(e: Plan.RoleSkipped | Plan.NothingDispatched) -> list[Statement]:
    """A skipped role, or a plan that got no deliberation: on the Plan node, with the reason."""
    plan = _plan(e.plan_id)
    if isinstance(e, Plan.RoleSkipped):
        row = {"plan_id": e.plan_id, "entry": f"{e.role}: {e.reason}"}
        return [_row(_PLAN_ROLE_SKIPPED, row, node="plan_id", writes=(plan,))]
    row = {"plan_id": e.plan_id, "reason": e.reason}
    return [_row(_PLAN_NOTHING_DISPATCHED, row, node="plan_id", writes=(plan,))]


@_statements.register
def _(e: Deliberation.Requested, base: _Base) -> list[Statement]:
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
    d_id = base["id"]
    out = [_row(_REQUESTED, params, node="id", writes=(_d(d_id), _state(d_id)))]
    if e.plan_id:
        plan = {"id": base["id"], "plan_id": e.plan_id, "story_id": e.story_id}
        out += [
            _row(_PLAN, plan, node="plan_id", writes=(_plan(e.plan_id),), policy=SAME),
            _row(_SPAWNED, plan, node="id", reads=(_plan(e.plan_id), _d(d_id))),
        ]
    if e.story_id:
        out += _story_links(e, d_id)
    return out


def _agent(base: _Base, agent_id: str) -> Statement:
    params = {"id": base["id"], "agent_id": agent_id}
    reads, writes = (_d(base["id"]),), (_agent_key(agent_id),)
    return _row(_AGENT, params, node="agent_id", reads=reads, writes=writes, policy=SAME)


def _in_progress(base: _Base) -> Statement:
    params = {"id": base["id"], "status": "IN_PROGRESS"}
    return _row(_STATUS, params, node="id", writes=(_state(base["id"]),), policy=SAME)


@_statements.register
def _(e: Deliberation.Started, base: _Base) -> list[Statement]:
    out = [_in_progress(base), *(_agent(base, a) for a in e.agents)]
    if e.seats:  # version 2: the council it started with (version 1 recorded none)
        d = {"id": base["id"], "version": e.council_version}
        out.append(Statement(_CONVENED, d))
        for seat, place in sorted(e.seats.items()):
            member = {"id": base["id"], "agent_id": place.get("member") or seat, "seat": seat}
            out += [Statement(_MEMBER_AGENT, member), Statement(_SAT_IN, member)]
    return out


@_statements.register
def _(e: Deliberation.ProposalReceived, base: _Base) -> list[Statement]:
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
    model = {"agent_id": e.agent_id, "model": e.model}
    return [
        _in_progress(base),
        _agent(base, e.agent_id),
        _row(_AGENT_MODEL, model, node="agent_id", policy=LAST),
        *_proposal(_PROPOSAL, params, base["id"], e.agent_id),
    ]


def _proposal(cypher: str, params: CypherParams, d_id: str, agent_id: str) -> list[Statement]:
    """The proposal's node, then its two links. The links' row holds the keys alone: with the
    whole proposal it was packed, sent and compared (SAME rows are deduplicated) three times."""
    props = _props(d_id, agent_id)
    link = {"id": d_id, "proposal_id": params["proposal_id"], "agent_id": agent_id}
    return [
        _row(cypher, params, node="proposal_id", writes=(props,)),
        _row(_HAS_PROPOSAL, link, node="proposal_id", reads=(_d(d_id), props), policy=SAME),
        _row(_PROPOSED, link, node="proposal_id", reads=(_agent_key(agent_id), props), policy=SAME),
    ]


@_statements.register
def _(e: Deliberation.LateProposalReceived, base: _Base) -> list[Statement]:
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
    return [_agent(base, e.agent_id), *_proposal(_LATE_PROPOSAL, params, base["id"], e.agent_id)]


@_statements.register
def _(e: Deliberation.AgentFailed, base: _Base) -> list[Statement]:
    return [_in_progress(base), _agent(base, e.agent_id)]


@_statements.register
def _(e: Deliberation.ProposalScored, base: _Base) -> list[Statement]:
    params = {
        "id": base["id"],
        "agent_id": e.agent_id,
        "scored": f"{base['id']}:{e.agent_id}",
        "candidates": candidate_ids(base["id"], e.agent_id),
        "score": float(e.score),
        "checks": json.dumps(e.checks, sort_keys=True),
    }
    return [_row(_SCORED, params, node="scored", writes=(_props(base["id"], e.agent_id),))]


@_statements.register
def _(e: Deliberation.Completed, base: _Base) -> list[Statement]:
    params = {**base, "status": "COMPLETED", "winner": e.winner, "ranking": list(e.ranking)}
    won = {"id": base["id"], "candidates": candidate_ids(base["id"], e.winner)}
    d_id = base["id"]
    return [
        _row(_COMPLETED, params, node="id", writes=(_state(d_id),)),
        _row(_WON_BY, won, node="id", reads=(_d(d_id), _props(d_id, e.winner))),
    ]


@_statements.register
def _(e: Deliberation.TimedOut, base: _Base) -> list[Statement]:
    params = {**base, "status": "TIMEOUT", "missing": list(e.missing)}
    return [_row(_TIMED_OUT, params, node="id", writes=(_state(base["id"]),))]


@_statements.register
def _(e: Deliberation.Failed, base: _Base) -> list[Statement]:
    params = {**base, "status": "FAILED", "reason": e.reason}
    return [_row(_CLOSED, params, node="id", writes=(_state(base["id"]),))]


@_statements.register
def _(e: Deliberation.Cancelled, base: _Base) -> list[Statement]:
    params = {**base, "status": "CANCELLED", "reason": e.reason}
    return [_row(_CLOSED, params, node="id", writes=(_state(base["id"]),))]


# ---------------------------------------------------------------- critiques


@_statements.register
def _(e: Deliberation.CritiqueReceived, base: _Base) -> list[Statement]:
    # A critique in round n reviews the peers' round n-1 proposals: one link per review, from
    # the reviewer's own proposal of that round to the one it reviewed. A failed critique call
    # (``error``) has no reviews: timeline only. A reviewer with no proposal links nothing.
    reviewed = e.round - 1
    out = []
    for review in e.reviews:
        reviewer = str(review.get("reviewer") or e.agent_id)
        target = str(review.get("target", ""))
        score = review.get("score")
        params = {
            **base,
            "critique": f"{base['id']}:{e.round}:{reviewer}>{target}",
            "critic": reviewer,
            "critic_proposal_id": proposal_id(base["id"], reviewed, reviewer),
            "target_proposal_id": proposal_id(base["id"], reviewed, target),
            "round": e.round,
            "content": str(review.get("text", "")),
        }
        cypher = _CRITIQUED_UNRATED
        if score is not None:
            params["rating"] = float(score)
            cypher = _CRITIQUED
        reads = (_props(base["id"], reviewer), _props(base["id"], target))
        out.append(_row(cypher, params, node="critique", reads=reads))
    return out


# ---------------------------------------------------------------- councils
#
# Councils change rarely: their rows name no reads or writes, so a batch keeps them in stream
# order after everything before them (``projectors.graph.batch``).

_COUNCIL = """
UNWIND $rows AS r
MERGE (c:Council {id: r.id})
SET c.role = r.role, c.status = r.status, c.model = r.model, c.endpoint = r.endpoint,
    c.rounds = r.rounds
"""
_COUNCIL_TOUCH = """
UNWIND $rows AS r
MATCH (c:Council {id: r.id}) SET c.version = r.version, c.updated_at = r.at
"""
_COUNCIL_STATUS = "UNWIND $rows AS r MATCH (c:Council {id: r.id}) SET c.status = r.status"
_MEMBER_AGENT = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
MERGE (a:Agent {id: r.agent_id})
SET a.role = d.role
"""
_REGISTERED_AGENT = """
UNWIND $rows AS r
MERGE (a:Agent {id: r.agent_id})
SET a.role = r.role
"""
_JOINED = """
UNWIND $rows AS r
MATCH (a:Agent {id: r.agent_id})
MATCH (c:Council {id: r.id})
CREATE (a)-[:MEMBER_OF {since: r.at, until: '', model: r.model, endpoint: r.endpoint}]->(c)
"""
_RECONFIGURED = """
UNWIND $rows AS r
MATCH (a:Agent {id: r.agent_id})-[m:MEMBER_OF]->(c:Council {id: r.id})
WHERE m.until = ''
SET m.model = r.model, m.endpoint = r.endpoint
"""
_LEFT = """
UNWIND $rows AS r
MATCH (a:Agent {id: r.agent_id})-[m:MEMBER_OF]->(c:Council {id: r.id})
WHERE m.until = ''
SET m.until = r.at
"""
_ALL_LEFT = """
UNWIND $rows AS r
MATCH (a:Agent)-[m:MEMBER_OF]->(c:Council {id: r.id})
WHERE m.until = ''
SET m.until = r.at
"""
_CONVENED = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id})
MATCH (c:Council)
WHERE c.role = d.role
CREATE (c)-[:CONVENED {version: r.version}]->(d)
"""
_SAT_IN = """
UNWIND $rows AS r
MATCH (a:Agent {id: r.agent_id})
MATCH (d:Deliberation {id: r.id})
CREATE (a)-[:SAT_IN {seat: r.seat}]->(d)
"""


def council_statements(event: DomainEvent) -> list[Statement]:
    """A council event's statements: the Council node, and memberships opened and closed."""
    e = event
    base: _Base = {"id": str(e.originator_id), "at": _at(e.timestamp)}
    body = _council_statements(event, base)
    touch = Statement(_COUNCIL_TOUCH, {**base, "version": e.originator_version})
    return [*body, touch] if body or isinstance(e, Council.Event) else []


@singledispatch
def _council_statements(event: object, base: _Base) -> list[Statement]:
    return []  # a council event the graph does not model: the node's version moves only


def _settings_row(e: Council.Created | Council.Recreated, base: _Base, role: str) -> Statement:
    params = {
        **base,
        "role": role,
        "status": "active",
        "model": e.model,
        "endpoint": e.endpoint,
        "rounds": e.deliberation_rounds,
    }
    return Statement(_COUNCIL, params)


@_council_statements.register
def _(e: Council.Created, base: _Base) -> list[Statement]:
    return [_settings_row(e, base, e.role)]


@_council_statements.register
def _(e: Council.Recreated, base: _Base) -> list[Statement]:
    return [_settings_row(e, base, _council_role(e))]


def _council_role(e: DomainEvent) -> str:
    return next((r.value for r in Role if council_id(r.value) == e.originator_id), "")


@_council_statements.register
def _(e: Council.AgentRegistered, base: _Base) -> list[Statement]:
    params = {
        **base,
        "agent_id": e.agent_id,
        "role": _council_role(e),
        "model": e.model,
        "endpoint": e.endpoint,
    }
    return [Statement(_REGISTERED_AGENT, params), Statement(_JOINED, params)]


@_council_statements.register
def _(e: Council.AgentReconfigured, base: _Base) -> list[Statement]:
    params = {**base, "agent_id": e.agent_id, "model": e.model, "endpoint": e.endpoint}
    return [Statement(_RECONFIGURED, params)]


@_council_statements.register
def _(e: Council.AgentUnregistered, base: _Base) -> list[Statement]:
    return [Statement(_LEFT, {**base, "agent_id": e.agent_id})]


@_council_statements.register
def _(e: Council.Deleted, base: _Base) -> list[Statement]:
    return [
        Statement(_ALL_LEFT, base),
        Statement(_COUNCIL_STATUS, {**base, "status": "deleted"}),
    ]


# ---------------------------------------------------------------- decisions
#
# A plan is on the graph from its approval on, with who approved it, when, for which roles and
# story: a plan none of whose deliberations has started yet (or one that spawned none) is there
# too. The Plan node is MERGEd: its deliberations' requests MERGE it as well (their own
# ``story_id`` only), whichever the graph sees first.

_PLAN_APPROVED = """
UNWIND $rows AS r
MERGE (p:Plan {id: r.plan_id})
SET p.story_id = r.story_id, p.approved_by = r.approved_by, p.approved_at = r.approved_at,
    p.roles = r.roles, p.description = r.description, p.tasks = r.tasks
"""
# What the plan dispatcher did not do, and why: a role skipped (no council) is appended to the
# plan's ``skipped_roles`` as "ROLE: why"; a plan that got no deliberation at all says why in
# ``nothing_dispatched``. Each event is applied once (the position), so appending is exact.
_PLAN_ROLE_SKIPPED = """
UNWIND $rows AS r
MERGE (p:Plan {id: r.plan_id})
SET p.skipped_roles = coalesce(p.skipped_roles, []) + [r.entry]
"""
_PLAN_NOTHING_DISPATCHED = """
UNWIND $rows AS r
MERGE (p:Plan {id: r.plan_id})
SET p.nothing_dispatched = r.reason
"""
# The architect's choice: from the architect (an ARCHITECT council member) to the winner's final
# proposal, found by key like WON_BY's (its on-time proposal with the highest round).
_ARCHITECT = "UNWIND $rows AS r MERGE (a:Agent {id: r.architect_id}) SET a.role = 'ARCHITECT'"
_SELECTED = """
UNWIND $rows AS r
UNWIND r.candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.late = false
WITH r.architect_id AS architect_id, r.candidates AS candidates, r.id AS id,
    r.rationale AS rationale, r.shortlist AS shortlist, r.model AS model,
    r.latency_ms AS latency_ms, r.at AS at, max(p.round) AS top
UNWIND candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.round = top
MATCH (a:Agent {id: architect_id})
CREATE (a)-[:SELECTED {deliberation_id: id, rationale: rationale, candidates: shortlist,
    model: model, latency_ms: latency_ms, at: at}]->(p)
"""
_FELL_BACK = """
UNWIND $rows AS r
MATCH (d:Deliberation {id: r.id}) SET d.architect_fallback = r.reason
"""
# A final rating: from the rater to the rated agent's final proposal. Unrated (the rater gave
# nothing usable) keeps ``score`` null, in a statement of its own for the reason given at
# ``_CRITIQUED_UNRATED``.
_RATED = """
UNWIND $rows AS r
UNWIND r.candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.late = false
WITH r.rater AS rater, r.candidates AS candidates, r.id AS id, r.score AS score,
    r.content AS content, r.source AS source, r.at AS at, max(p.round) AS top
UNWIND candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.round = top
MATCH (a:Agent {id: rater})
CREATE (a)-[:RATED {deliberation_id: id, score: score, content: content, source: source,
    at: at}]->(p)
"""
_RATED_UNSCORED = """
UNWIND $rows AS r
UNWIND r.candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.late = false
WITH r.rater AS rater, r.candidates AS candidates, r.id AS id, r.content AS content,
    r.source AS source, r.at AS at, max(p.round) AS top
UNWIND candidates AS pid
MATCH (p:Proposal {id: pid})
WHERE p.round = top
MATCH (a:Agent {id: rater})
CREATE (a)-[:RATED {deliberation_id: id, content: content, source: source, at: at}]->(p)
"""


def _plan_statements(e: Plan.Approved) -> list[Statement]:
    """A plan approval: the Plan node with the approval, on its story (made if new)."""
    row = {
        "plan_id": e.plan_id,
        "story_id": e.story_id,
        "approved_by": e.approved_by,
        "approved_at": _at(e.approved_at),
        "roles": [str(r) for r in e.roles],
        "description": e.description,
        "tasks": [str(t) for t in e.tasks],
    }
    return [
        _row(_PLAN_APPROVED, row, node="plan_id", writes=(_plan(e.plan_id),)),
        _story(e.story_id),
        _story_plan(e.story_id, e.plan_id),
    ]


@_statements.register
def _(e: Deliberation.ArchitectSelected, base: _Base) -> list[Statement]:
    d_id = base["id"]
    if not e.architect_id:  # no one to link from (every recorded choice names its architect)
        return []
    row = {
        "id": d_id,
        "at": base["at"],
        "architect_id": e.architect_id,
        "selection": f"{d_id}:selected",
        "candidates": candidate_ids(d_id, e.winner),
        "rationale": e.rationale,
        "shortlist": [str(c) for c in e.candidates],
        "model": e.model,
        "latency_ms": e.latency_ms,
    }
    agent = _agent_key(e.architect_id)
    return [
        _row(_ARCHITECT, row, node="architect_id", writes=(agent,), policy=SAME),
        _row(_SELECTED, row, node="selection", reads=(agent, _props(d_id, e.winner))),
    ]


@_statements.register
def _(e: Deliberation.ArchitectFellBack, base: _Base) -> list[Statement]:
    row = {"id": base["id"], "reason": e.reason}
    return [_row(_FELL_BACK, row, node="id", writes=(_state(base["id"]),))]


@_statements.register
def _(e: Deliberation.PeerRatingsReceived, base: _Base) -> list[Statement]:
    # A failed rating call (``error``) has no reviews: timeline only.
    d_id = base["id"]
    out = [_agent(base, e.agent_id)] if e.reviews else []
    for review in e.reviews:
        rater = str(review.get("reviewer") or e.agent_id)
        target = str(review.get("target", ""))
        score = review.get("score")
        row: dict[str, object] = {
            "id": d_id,
            "at": base["at"],
            "rating": f"{d_id}:rated:{rater}>{target}",
            "rater": rater,
            "candidates": candidate_ids(d_id, target),
            "content": str(review.get("text", "")),
            "source": str(review.get("source", "")),
        }
        cypher = _RATED_UNSCORED
        if score is not None:
            row["score"] = float(score)
            cypher = _RATED
        reads = (_agent_key(rater), _props(d_id, target))
        out.append(_row(cypher, row, node="rating", reads=reads))
    return out


# ---------------------------------------------------------------- the vocabulary

VOCABULARY: tuple[str, ...] = tuple(
    dict.fromkeys(  # _MEMBER_AGENT and _AGENT are one text
        (
            # Councils first (they exist before the deliberations they convene; their rows
            # name nothing, so a row after one follows it anyway), then plans and stories,
            _COUNCIL, _COUNCIL_STATUS, _REGISTERED_AGENT, _JOINED, _RECONFIGURED, _LEFT,
            _ALL_LEFT, _COUNCIL_TOUCH,
            _PLAN_APPROVED, _PLAN_ROLE_SKIPPED, _PLAN_NOTHING_DISPATCHED,
            _STORY, _PHASE, _PHASE_CHANGE,
            # then a deliberation's life in the order it writes the graph,
            _REQUESTED, _PLAN, _SPAWNED, _STORY_DELIBERATION, _STORY_PLAN, _STATUS, _AGENT,
            _MEMBER_AGENT, _CONVENED, _SAT_IN, _PROPOSAL, _LATE_PROPOSAL, _HAS_PROPOSAL,
            _PROPOSED, _CRITIQUED, _CRITIQUED_UNRATED, _RATED, _RATED_UNSCORED, _SCORED,
            _ARCHITECT, _SELECTED, _FELL_BACK, _COMPLETED, _WON_BY, _TIMED_OUT, _CLOSED, _EVENT,
            # and the LAST rows, which go after everything else.
            _TOUCH, _AGENT_MODEL,
        )
    )
)  # fmt: skip
"""Every data statement, once, in the order of a deliberation's life: the slots of
``projectors.graph.batch.plan_layers``, whose batches of a few deliberations then fit in one
layer (a row needs a later layer only to follow a row of a statement listed after its own)."""
