"""The graph as it is: one query per kind of node or link, records keyed by deliberation, and the
deliberations that moved while they were read, read again alone."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from eventsourcing.application import Application

from projectors.graph.port import DecisionGraph
from projectors.verify._log_scan import Log, Record

_ALL = 10**9
_QUERY_TIMEOUT_S = 300.0
_SETTLE_TRIES = 3

Side = dict[str, Record]
"""One deliberation's part of the graph, found or expected: a record per node or link, by key."""

D_FIELDS = (
    "task_id", "task", "role", "status", "num_agents", "rounds", "deadline", "plan_id",
    "story_id", "requested_by", "created_at", "updated_at", "finished_at", "version", "winner",
    "ranking", "missing", "reason", "architect_fallback",
)  # fmt: skip
P_FIELDS = (
    "deliberation_id", "agent_id", "round", "content", "model", "tokens", "latency_ms", "late",
    "received_at", "score", "checks",
)  # fmt: skip
E_FIELDS = ("seq", "type", "at", "version", "agent_id", "detail")
C_FIELDS = ("round", "critic", "content", "rating", "at")
S_FIELDS = ("rationale", "candidates", "model", "latency_ms", "at")
R_FIELDS = ("score", "content", "source", "at")
PLAN_FIELDS = (
    "story_id", "approved_by", "approved_at", "roles", "description", "tasks", "skipped_roles",
    "nothing_dispatched",
)  # fmt: skip


def _cols(var: str, names: Iterable[str]) -> str:
    return ", ".join(f"{var}.{n} AS {n}" for n in names)


_DELIBERATIONS = f"MATCH (d:Deliberation) {{where}} RETURN d.id AS id, {_cols('d', D_FIELDS)}"
_SPAWNED = "MATCH (x:Plan)-[:SPAWNED]->(d:Deliberation) {where} RETURN d.id AS id, x.id AS link"
_WON_BY = "MATCH (d:Deliberation)-[:WON_BY]->(x:Proposal) {where} RETURN d.id AS id, x.id AS link"
_PROPOSALS = f"""
MATCH (p:Proposal) {{where}}
OPTIONAL MATCH (d:Deliberation)-[:HAS_PROPOSAL]->(p)
OPTIONAL MATCH (a:Agent)-[:PROPOSED]->(p)
RETURN p.id AS key, d.id AS linked, a.id AS agent, {_cols("p", P_FIELDS)}
"""
_CRITIQUES = f"""
MATCH (c:Proposal)-[k:CRITIQUED]->(t:Proposal) {{where}}
RETURN c.deliberation_id AS id, c.id AS source, t.id AS target, {_cols("k", C_FIELDS)}
"""
_SELECTED = f"""
MATCH (a:Agent)-[k:SELECTED]->(p:Proposal) {{where}}
RETURN k.deliberation_id AS id, a.id AS from_agent, p.id AS to_proposal, {_cols("k", S_FIELDS)}
"""
_RATED = f"""
MATCH (a:Agent)-[k:RATED]->(p:Proposal) {{where}}
RETURN k.deliberation_id AS id, a.id AS from_agent, p.id AS to_proposal, {_cols("k", R_FIELDS)}
"""
_EVENTS = f"""
MATCH (e:Event) OPTIONAL MATCH (d:Deliberation)-[:HAD_EVENT]->(e)
RETURN e.id AS key, d.id AS linked, {_cols("e", E_FIELDS)}
"""
_EVENTS_OF = f"""
MATCH (d:Deliberation)-[:HAD_EVENT]->(e:Event) WHERE d.id IN $ids
RETURN e.id AS key, d.id AS linked, {_cols("e", E_FIELDS)}
"""
_AGENTS = "MATCH (a:Agent) RETURN a.id AS id, a.role AS role, a.model AS model"
_PLANS = f"MATCH (x:Plan) RETURN x.id AS id, {_cols('x', PLAN_FIELDS)}"


def read_graph(graph: DecisionGraph, ids: list[str] | None) -> tuple[dict[str, Side], Side]:
    """The graph's records by deliberation id (all, or those of ``ids``), and the shared nodes
    (Agent, Plan; read only when reading all)."""
    sides: dict[str, Side] = defaultdict(dict)

    def rows(cypher: str, anchor: str = "") -> list[Record]:
        text = cypher.replace("{where}", f"WHERE {anchor} IN $ids" if ids is not None else "")
        params = {"ids": ids} if ids is not None else None
        return graph.query(text, params, limit=_ALL, timeout_s=_QUERY_TIMEOUT_S)

    for r in rows(_DELIBERATIONS, "d.id"):
        sides[r["id"]]["Deliberation"] = {
            **{f: r[f] for f in D_FIELDS}, "<-SPAWNED": [], "WON_BY->": []
        }  # fmt: skip
    for r in rows(_SPAWNED, "d.id"):  # a node created since it was read: its links only
        _node(sides[r["id"]])["<-SPAWNED"].append(r["link"])
    for r in rows(_WON_BY, "d.id"):
        _node(sides[r["id"]])["WON_BY->"].append(_tail(r["link"], r["id"]))
    for r in rows(_PROPOSALS, "p.deliberation_id"):
        d_id = str(r["deliberation_id"])
        fresh = {**{f: r[f] for f in P_FIELDS}, "<-HAS_PROPOSAL": [], "<-PROPOSED": []}
        record = sides[d_id].setdefault(f"Proposal[{_tail(r['key'], d_id)}]", fresh)
        record["checks"] = _json(r["checks"])
        _link(record, "<-HAS_PROPOSAL", r["linked"])
        _link(record, "<-PROPOSED", r["agent"])
    for r in rows(_CRITIQUES, "c.deliberation_id"):
        d_id = str(r["id"])
        key = f"CRITIQUED[{_tail(r['source'], d_id)} -> {_tail(r['target'], d_id)}]"
        _put(sides[d_id], key, {f: r[f] for f in C_FIELDS})
    for cypher, kind, names in ((_SELECTED, "SELECTED", S_FIELDS), (_RATED, "RATED", R_FIELDS)):
        for r in rows(cypher, "k.deliberation_id"):
            d_id = str(r["id"])
            key = f"{kind}[{r['from_agent']} -> {_tail(r['to_proposal'], d_id)}]"
            _put(sides[d_id], key, {f: r[f] for f in names})
    for r in rows(_EVENTS if ids is None else _EVENTS_OF):
        d_id, _, version = str(r["key"]).rpartition(":")
        fresh = {**{f: r[f] for f in E_FIELDS}, "<-HAD_EVENT": []}
        _link(sides[d_id].setdefault(f"Event[{version}]", fresh), "<-HAD_EVENT", r["linked"])
    for side in sides.values():
        for record in side.values():
            for name, value in record.items():
                if name.startswith("<-") or name.endswith("->"):
                    record[name] = sorted(value)
    shared: Side = {}
    if ids is None:
        shared.update({f"Agent[{r['id']}]": _without_id(r) for r in rows(_AGENTS)})
        shared.update({f"Plan[{r['id']}]": _without_id(r) for r in rows(_PLANS)})
    return dict(sides), shared


def _node(side: Side) -> Record:
    return side.setdefault("Deliberation", {"<-SPAWNED": [], "WON_BY->": []})


def _without_id(row: Record) -> Record:
    return {k: v for k, v in row.items() if k != "id"}


def _tail(node_id: str, d_id: str) -> str:
    """A proposal's id without its deliberation's: ``<round>:<agent>[:late:<version>]``."""
    prefix = f"{d_id}:"
    return node_id[len(prefix) :] if node_id.startswith(prefix) else node_id


def _link(record: Record, name: str, value: Any) -> None:
    if value is not None and value not in record[name]:
        record[name].append(value)


def _put(side: Side, key: str, record: Record) -> None:
    """Add ``record`` under ``key``, or ``key #2``… when another link joins the same nodes."""
    n, unique = 1, key
    while unique in side:
        n += 1
        unique = f"{key} #{n}"
    side[unique] = record


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def graph_versions(
    app: Application[UUID],
    graph: DecisionGraph,
    name: str,
    log: Log,
    found: dict[str, Side],
    window: tuple[int, int],
) -> dict[str, int]:
    """The version to compare each deliberation's records with: the one the graph held while it
    was read. Those it moved on meanwhile are read again alone, a few times, until one read
    sees them hold still; after that the last read stands, at the version its node names."""
    lo, hi = window
    versions = {str(i): h.at(hi) for i, h in log.histories.items()}
    moving = [str(i) for i, h in log.histories.items() if h.at(lo) != h.at(hi)]
    for _ in range(_SETTLE_TRIES):
        if not moving:
            return versions
        lo = graph.position(name)
        again, _ = read_graph(graph, moving)
        hi = graph.position(name)
        log.extend(app, hi)
        for d_id in moving:
            found[d_id] = again.get(d_id, {})
            versions[d_id] = log.history(d_id).at(hi)
        moving = [d for d in moving if log.history(d).at(lo) != log.history(d).at(hi)]
    for d_id in moving:
        h = log.history(d_id)
        named = found.get(d_id, {}).get("Deliberation", {}).get("version")
        if isinstance(named, int) and h.at(lo) <= named <= h.at(hi):
            versions[d_id] = named
    return versions
