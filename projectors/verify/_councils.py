"""Councils in the graph against their events: each Council node's properties and every
membership (MEMBER_OF: when it began and ended, the member's model and endpoint).

Expectations are folded from the council events in the log, not from the statements. Councils
change rarely, so a projection that moved during the read is compared at both ends of its window
and a difference is reported only when the graph matches neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aggregates import Council, Role, council_id
from projectors.graph.port import DecisionGraph
from projectors.verify._log_scan import Log, Record
from projectors.verify._report import Difference, pair

_COUNCILS = """
MATCH (c:Council)
RETURN c.id AS id, c.role AS role, c.status AS status, c.model AS model,
    c.endpoint AS endpoint, c.rounds AS rounds, c.version AS version, c.updated_at AS updated_at
"""
_MEMBERS = """
MATCH (a:Agent)-[m:MEMBER_OF]->(c:Council)
RETURN a.id AS agent, c.role AS role, m.since AS since, m.until AS until, m.model AS model,
    m.endpoint AS endpoint
"""
_LIMIT = 1_000_000

Side = dict[str, Record]


def read_councils(graph: DecisionGraph) -> Side:
    """The graph's councils and memberships, keyed as ``expected_councils`` keys them."""
    side: Side = {}
    for r in graph.query(_COUNCILS, None, limit=_LIMIT):
        side[f"Council[{r['role']}]"] = {k: r[k] for k in r if k != "role"}
    for r in graph.query(_MEMBERS, None, limit=_LIMIT):
        key = f"MEMBER_OF[{r['agent']} -> {r['role']} since {r['since']}]"
        side[key] = {"until": r["until"], "model": r["model"], "endpoint": r["endpoint"]}
    return side


def expected_councils(log: Log, position: int) -> Side:
    """What the graph should hold once the log is projected up to ``position``."""
    side: Side = {}
    open_since: dict[tuple[str, str], str] = {}
    for at_position, e in log.councils:
        if at_position > position:
            break
        role = _role(e)
        node = f"Council[{role}]"
        at = e.timestamp.isoformat()
        if isinstance(e, Council.Created | Council.Recreated):
            side[node] = {
                "id": str(e.originator_id), "status": "active", "model": e.model,
                "endpoint": e.endpoint, "rounds": e.deliberation_rounds,
            }  # fmt: skip
        elif isinstance(e, Council.AgentRegistered):
            open_since[(e.agent_id, role)] = at
            key = f"MEMBER_OF[{e.agent_id} -> {role} since {at}]"
            side[key] = {"until": "", "model": e.model, "endpoint": e.endpoint}
        elif isinstance(e, Council.AgentReconfigured):
            since = open_since.get((e.agent_id, role))
            if since is not None:
                key = f"MEMBER_OF[{e.agent_id} -> {role} since {since}]"
                side[key].update(model=e.model, endpoint=e.endpoint)
        elif isinstance(e, Council.AgentUnregistered | Council.Deleted):
            gone = [e.agent_id] if isinstance(e, Council.AgentUnregistered) else None
            for agent, r in list(open_since):
                if r == role and (gone is None or agent in gone):
                    since = open_since.pop((agent, r))
                    side[f"MEMBER_OF[{agent} -> {role} since {since}]"]["until"] = at
            if isinstance(e, Council.Deleted) and node in side:
                side[node]["status"] = "deleted"
        if node in side:
            side[node].update(version=e.originator_version, updated_at=at)
    return side


def council_differences(graph_side: Side, log: Log, lo: int, hi: int) -> list[Difference]:
    """The graph's councils against the log at ``hi`` (or at ``lo``, if the graph moved)."""
    details = list(_diff(graph_side, expected_councils(log, hi)))
    if details and lo != hi and not list(_diff(graph_side, expected_councils(log, lo))):
        return []
    return [Difference("graph", "", "", f"councils: {d}") for d in details]


def _diff(got: Side, want: Side) -> Iterator[str]:
    for key in sorted(got.keys() | want.keys()):
        if key not in got:
            yield f"{key}: missing from the graph"
        elif key not in want:
            yield f"{key}: in the graph, not in the events"
        else:
            for name in sorted(got[key].keys() | want[key].keys()):
                found, expected = got[key].get(name), want[key].get(name)
                if found != expected:
                    yield f"{key}.{name}: {pair('graph', found, expected)}"


def _role(e: Any) -> str:
    return next((r.value for r in Role if council_id(r.value) == e.originator_id), "")
