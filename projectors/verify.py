"""Verification: replay every deliberation and report each place the graph or the cache differs.

The cache: every field of each entry (``DeliberationView``, result by result) against the view
built from the replay at the entry's own version. A missing entry is a difference unless it may
have expired: finished, and longer ago than ``cache_expiry_s`` (unknown: counted as a miss only).

The graph: everything ``projectors.graph.statements`` writes for a deliberation: its node's
properties, SPAWNED from its Plan, WON_BY, each proposal on time or late with every property and
its HAS_PROPOSAL and PROPOSED links, each CRITIQUED link with its properties, and its timeline
(one Event per event, with stream sequence, type, time, version, agent and detail, linked by
HAD_EVENT); and the shared Agent and Plan nodes. What no event explains is a difference too.
Expectations come from the log, not from the statements: the replay gives the state, the events
what the aggregate does not keep (each event's sequence and time, late proposals, when a critique
was made). A difference names the deliberation, the node or link, the field, and both values.

A live node projects while it is verified; each read sees a position between the projection's
positions read before and after it. A deliberation with no event in between was seen whole at
one version; one that moved is read again alone until it holds still (``_SETTLE_TRIES``). Agent
and Plan nodes are shared, so they may hold any value they had between the two positions.

Cost: one pass over the log (each event decoded once; a replay folds the events already read, no
second read of the store), one query per kind of node or link, cache reads pipelined.

Over 400 lines on purpose: one comparison of both projections, whose expectations, reads and
difference reports are read together and must change together.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any, cast
from uuid import UUID

from eventsourcing.application import Application, project_aggregate
from eventsourcing.utils import get_topic

from aggregates import Deliberation, DeliberationStatus
from projectors.cache.board import DeliberationBoard
from projectors.cache.view import DeliberationView, ResultView, view_from_aggregate
from projectors.graph.port import DecisionGraph

__all__ = ["Difference", "VerifyReport", "verify"]

_PAGE = 1000
_ALL = 10**9
_QUERY_TIMEOUT_S = 300.0
_CACHE_BATCH = 500
_SETTLE_TRIES = 3
_CLOCK_SLACK_S = 5.0
"""Clocks of the writer and of this process may differ this much (expiry of cache entries)."""
_MAX_PER_DELIBERATION = 20

Record = dict[str, Any]
Side = dict[str, Record]
"""One deliberation's part of the graph, found or expected: a record per node or link, by key."""

_D_FIELDS = (
    "task_id", "task", "role", "status", "num_agents", "rounds", "deadline", "plan_id",
    "story_id", "requested_by", "created_at", "updated_at", "finished_at", "version", "winner",
    "ranking", "missing", "reason",
)  # fmt: skip
_P_FIELDS = (
    "deliberation_id", "agent_id", "round", "content", "model", "tokens", "latency_ms", "late",
    "received_at", "score", "checks",
)  # fmt: skip
_E_FIELDS = ("seq", "type", "at", "version", "agent_id", "detail")
_C_FIELDS = ("round", "critic", "content", "rating", "at")


def _cols(var: str, names: Iterable[str]) -> str:
    return ", ".join(f"{var}.{n} AS {n}" for n in names)


_DELIBERATIONS = f"MATCH (d:Deliberation) {{where}} RETURN d.id AS id, {_cols('d', _D_FIELDS)}"
_SPAWNED = "MATCH (x:Plan)-[:SPAWNED]->(d:Deliberation) {where} RETURN d.id AS id, x.id AS link"
_WON_BY = "MATCH (d:Deliberation)-[:WON_BY]->(x:Proposal) {where} RETURN d.id AS id, x.id AS link"
_PROPOSALS = f"""
MATCH (p:Proposal) {{where}}
OPTIONAL MATCH (d:Deliberation)-[:HAS_PROPOSAL]->(p)
OPTIONAL MATCH (a:Agent)-[:PROPOSED]->(p)
RETURN p.id AS key, d.id AS linked, a.id AS agent, {_cols("p", _P_FIELDS)}
"""
_CRITIQUES = f"""
MATCH (c:Proposal)-[k:CRITIQUED]->(t:Proposal) {{where}}
RETURN c.deliberation_id AS id, c.id AS source, t.id AS target, {_cols("k", _C_FIELDS)}
"""
_EVENTS = f"""
MATCH (e:Event) OPTIONAL MATCH (d:Deliberation)-[:HAD_EVENT]->(e)
RETURN e.id AS key, d.id AS linked, {_cols("e", _E_FIELDS)}
"""
_EVENTS_OF = f"""
MATCH (d:Deliberation)-[:HAD_EVENT]->(e:Event) WHERE d.id IN $ids
RETURN e.id AS key, d.id AS linked, {_cols("e", _E_FIELDS)}
"""
_AGENTS = "MATCH (a:Agent) RETURN a.id AS id, a.role AS role, a.model AS model"
_PLANS = "MATCH (x:Plan) RETURN x.id AS id, x.story_id AS story_id"


@dataclass(frozen=True)
class Difference:
    projection: str
    deliberation_id: str
    task_id: str
    detail: str


@dataclass
class VerifyReport:
    head: int = 0
    deliberations: int = 0
    positions: dict[str, int] = field(default_factory=dict)
    cache_misses: int = 0
    """Entries absent because they may have expired (reads fall back to a replay)."""
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


# ---------------------------------------------------------------- the log


class _History:
    """One deliberation's events (decoded, in version order) and their stream positions."""

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.events: list[Any] = []
        self._replays: dict[int, Deliberation] = {}

    def at(self, position: int) -> int:
        """The version once the log is applied up to ``position`` (0: not yet requested)."""
        return bisect.bisect_right(self.positions, position)

    def replay(self, version: int) -> Deliberation:
        """The aggregate folded from its first ``version`` events (version >= 1)."""
        if version not in self._replays:
            folded = project_aggregate(None, self.events[:version])
            self._replays[version] = cast(Deliberation, folded)
        return self._replays[version]


@dataclass
class _Log:
    """The log read so far: every deliberation's history, and the shared nodes' values over it."""

    read_to: int = 0
    histories: dict[UUID, _History] = field(default_factory=lambda: defaultdict(_History))
    shared: dict[str, list[tuple[int, Record, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """``Agent[<id>]``, ``Plan[<id>]``: (position, the node's values from then on, deliberation)."""
    _roles: dict[str, str] = field(default_factory=dict)

    def history(self, d_id: str) -> _History:
        return self.histories[UUID(d_id)]

    def task_id(self, d_id: str) -> str:
        """The deliberation's task id ("" for one the log does not hold)."""
        try:
            history = self.histories.get(UUID(d_id))
        except ValueError:
            return ""
        return str(getattr(history.events[0], "task_id", "")) if history else ""

    def extend(self, app: Application[Any], stop: int) -> None:
        prefix = get_topic(Deliberation) + "."
        while self.read_to < stop:
            page = app.recorder.select_notifications(self.read_to + 1, _PAGE, stop=stop)
            if not page:
                break
            for n in page:
                if n.topic.startswith(prefix):
                    event = app.mapper.to_domain_event(n)
                    history = self.histories[UUID(str(n.originator_id))]
                    history.positions.append(n.id)
                    history.events.append(event)
                    self._share(event, n.id)
            self.read_to = page[-1].id

    def _share(self, e: Any, position: int) -> None:
        """Track what the event sets on shared nodes (the statements' MERGEs: last one wins)."""
        d_id = str(e.originator_id)
        if isinstance(e, Deliberation.Requested):
            self._roles[d_id] = e.role
            if e.plan_id:
                self.shared[f"Plan[{e.plan_id}]"].append((position, {"story_id": e.story_id}, d_id))
            return
        agents: list[str] = []
        model: str | None = None
        if isinstance(e, Deliberation.Started):
            agents = list(e.agents)
        elif isinstance(e, Deliberation.ProposalReceived):  # revisions too
            agents, model = [e.agent_id], e.model
        elif isinstance(e, Deliberation.LateProposalReceived | Deliberation.AgentFailed):
            agents = [e.agent_id]
        for agent in agents:
            values = self.shared[f"Agent[{agent}]"]
            held: Record = dict(values[-1][1]) if values else {"role": None, "model": None}
            held["role"] = self._roles.get(d_id)
            if model is not None:
                held["model"] = model
            values.append((position, held, d_id))


# ---------------------------------------------------------------- verify


def verify(
    app: Application[Any],
    *,
    graph: DecisionGraph | None = None,
    graph_name: str = "graph",
    board: DeliberationBoard | None = None,
    cache_expiry_s: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Compare the graph and the cache with a replay of every deliberation.

    ``cache_expiry_s``: how long the cache keeps finished entries (``DELIBERATION_CLEANUP``; 0:
    for ever). None when unknown: a missing finished entry is then counted, not reported.
    """
    before: dict[str, int] = {}
    if graph is not None:
        before["graph"] = graph.position(graph_name)
    if board is not None:
        before["cache"] = board.position()
    head = app.recorder.max_notification_id() or 0
    report = VerifyReport(head=head, positions=dict(before))
    log = _Log()
    log.extend(app, head)
    after = dict(before)
    found: dict[str, Side] = {}
    shared: Side = {}
    if graph is not None:
        found, shared = _read_graph(graph, None)
        after["graph"] = graph.position(graph_name)
    views: dict[UUID, DeliberationView | None] = {}
    if board is not None:
        ids = list(log.histories)
        for i in range(0, len(ids), _CACHE_BATCH):
            views.update(board.get_many(ids[i : i + _CACHE_BATCH]))
        after["cache"] = board.position()
    log.extend(app, max([head, *after.values()]))
    versions: dict[str, int] = {}
    if graph is not None:
        window = (before["graph"], after["graph"])
        versions = _graph_versions(app, graph, graph_name, log, found, window)
    now = datetime.now(UTC)
    report.deliberations = len(log.histories)
    for done, (d_id, history) in enumerate(log.histories.items(), start=1):
        if board is not None and d_id in views:
            window = (history.at(before["cache"]), history.at(after["cache"]))
            cached = _cache_diff(history, views[d_id], window, cache_expiry_s, now, report)
            report.differences += _differences("cache", log, str(d_id), cached)
        if graph is not None:
            version = versions.get(str(d_id), history.at(after["graph"]))
            expected = _expected_graph(history, version) if version else {}
            graphed = list(_side_diff(found.pop(str(d_id), {}), expected))
            report.differences += _differences("graph", log, str(d_id), graphed)
        if on_progress is not None:
            on_progress(done, len(log.histories))
    if graph is not None:
        for stray, side in found.items():  # records of no deliberation in the log
            report.differences += _differences("graph", log, stray, list(_side_diff(side, {})))
        lo, hi = before["graph"], after["graph"]
        report.differences += _shared_diff(shared, log, lo, hi)
    return report


def _differences(projection: str, log: _Log, d_id: str, details: list[str]) -> list[Difference]:
    """One deliberation's differences, at most ``_MAX_PER_DELIBERATION`` (then how many more)."""
    if len(details) > _MAX_PER_DELIBERATION:
        kept = details[: _MAX_PER_DELIBERATION - 1]
        details = [*kept, f"… and {len(details) - len(kept)} more differences"]
    task_id = log.task_id(d_id)
    return [Difference(projection, d_id, task_id, detail) for detail in details]


# ---------------------------------------------------------------- cache


def _cache_diff(
    history: _History,
    view: DeliberationView | None,
    window: tuple[int, int],
    expiry_s: float | None,
    now: datetime,
    report: VerifyReport,
) -> list[str]:
    lo, hi = window
    if view is None:
        return _missing_entry(history, window, expiry_s, now, report)
    if not lo <= view.version <= hi:
        return [f"version: cache {view.version}, the cache's position allows {lo}..{hi}"]
    return list(_view_diff(view, view_from_aggregate(history.replay(view.version))))


def _missing_entry(
    history: _History,
    window: tuple[int, int],
    expiry_s: float | None,
    now: datetime,
    report: VerifyReport,
) -> list[str]:
    """A missing entry is right before its deliberation is projected and once it may have
    expired (finished, and longer ago than the expiry); a running one never expires."""
    lo, hi = window
    if lo == 0:  # not yet projected when the entries were read
        return []
    d = history.replay(hi)
    if not d.is_terminal:
        return [f"no cache entry (replay at version {hi}: {d.status.value})"]
    age = (now - (d.finished_at or d.modified_on)).total_seconds()
    if expiry_s is None or (expiry_s and age >= expiry_s - _CLOCK_SLACK_S):
        report.cache_misses += 1
        return []
    lives = f"finished entries live {expiry_s:g} s" if expiry_s else "entries never expire"
    return [f"no cache entry ({d.status.value} {age:.0f} s ago; {lives})"]


def _view_diff(got: DeliberationView, want: DeliberationView) -> Iterator[str]:
    for f in fields(DeliberationView):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if not f.compare or a == b:
            continue
        if f.name == "results":
            yield from _results_diff(a, b)
        else:
            yield f"{f.name}: {_pair('cache', a, b)}"


def _results_diff(got: tuple[ResultView, ...], want: tuple[ResultView, ...]) -> Iterator[str]:
    mine = {r.agent_id: r for r in got}
    theirs = {r.agent_id: r for r in want}
    for agent in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(agent), theirs.get(agent)
        if a is None or b is None:
            yield f"results[{agent}]: only in the {'replay' if a is None else 'cache'}"
            continue
        for f in fields(ResultView):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if x != y:
                yield f"results[{agent}].{f.name}: {_pair('cache', x, y)}"


# ---------------------------------------------------------------- graph: what it should hold


def _expected_graph(history: _History, version: int) -> Side:
    """The records the statements must have written for the first ``version`` events."""
    d = history.replay(version)
    d_id = str(d.id)
    side: Side = {"Deliberation": _expected_node(d)}
    for (agent, round_no), p in sorted(d.proposals.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        checks = [c.as_dict() for c in p.checks] if p.score is not None else None
        values = (round_no, p.content, p.model, p.tokens, p.latency_ms, False, _at(p.received_at))
        side[f"Proposal[{round_no}:{agent}]"] = _proposal(d_id, agent, *values, p.score, checks)
    critique_at: dict[tuple[str, int], str] = {}
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
    for (critic, round_no), reviews in sorted(d.critiques.items()):
        reviewed = round_no - 1
        for rv in reviews:
            if (rv.reviewer, reviewed) in d.proposals and (rv.target, reviewed) in d.proposals:
                side[f"CRITIQUED[{reviewed}:{rv.reviewer} -> {reviewed}:{rv.target}]"] = {
                    "round": round_no, "critic": rv.reviewer, "content": rv.text,
                    "rating": rv.score, "at": critique_at.get((critic, round_no)),
                }  # fmt: skip
    return side


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
        "<-SPAWNED": [d.plan_id] if d.plan_id else [],
        "WON_BY->": [f"{final[d.winner].round}:{d.winner}"] if d.winner in final else [],
    }  # fmt: skip


_CLOSED_WITH_REASON = (DeliberationStatus.FAILED, DeliberationStatus.CANCELLED)


def _proposal(d_id: str, agent: str, *values: Any) -> Record:
    record = dict(zip(_P_FIELDS, (d_id, agent, *values), strict=True))
    record.update({"<-HAS_PROPOSAL": [d_id], "<-PROPOSED": [agent]})
    return record


def _at(t: datetime) -> str:
    return t.isoformat()


# ---------------------------------------------------------------- graph: what it holds


def _read_graph(graph: DecisionGraph, ids: list[str] | None) -> tuple[dict[str, Side], Side]:
    """The graph's records by deliberation id (all, or those of ``ids``), and the shared nodes
    (Agent, Plan; read only when reading all)."""
    sides: dict[str, Side] = defaultdict(dict)

    def rows(cypher: str, anchor: str = "") -> list[Record]:
        text = cypher.replace("{where}", f"WHERE {anchor} IN $ids" if ids is not None else "")
        params = {"ids": ids} if ids is not None else None
        return graph.query(text, params, limit=_ALL, timeout_s=_QUERY_TIMEOUT_S)

    for r in rows(_DELIBERATIONS, "d.id"):
        sides[r["id"]]["Deliberation"] = {
            **{f: r[f] for f in _D_FIELDS}, "<-SPAWNED": [], "WON_BY->": []
        }  # fmt: skip
    for r in rows(_SPAWNED, "d.id"):  # a node created since it was read: its links only
        _node(sides[r["id"]])["<-SPAWNED"].append(r["link"])
    for r in rows(_WON_BY, "d.id"):
        _node(sides[r["id"]])["WON_BY->"].append(_tail(r["link"], r["id"]))
    for r in rows(_PROPOSALS, "p.deliberation_id"):
        d_id = str(r["deliberation_id"])
        fresh = {**{f: r[f] for f in _P_FIELDS}, "<-HAS_PROPOSAL": [], "<-PROPOSED": []}
        record = sides[d_id].setdefault(f"Proposal[{_tail(r['key'], d_id)}]", fresh)
        record["checks"] = _json(r["checks"])
        _link(record, "<-HAS_PROPOSAL", r["linked"])
        _link(record, "<-PROPOSED", r["agent"])
    for r in rows(_CRITIQUES, "c.deliberation_id"):
        d_id = str(r["id"])
        key = f"CRITIQUED[{_tail(r['source'], d_id)} -> {_tail(r['target'], d_id)}]"
        _put(sides[d_id], key, {f: r[f] for f in _C_FIELDS})
    for r in rows(_EVENTS if ids is None else _EVENTS_OF):
        d_id, _, version = str(r["key"]).rpartition(":")
        fresh = {**{f: r[f] for f in _E_FIELDS}, "<-HAD_EVENT": []}
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


def _graph_versions(
    app: Application[Any],
    graph: DecisionGraph,
    name: str,
    log: _Log,
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
        again, _ = _read_graph(graph, moving)
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


def _side_diff(got: Side, want: Side) -> Iterator[str]:
    yield from _absent([k for k in want if k not in got], "missing from the graph")
    yield from _absent([k for k in got if k not in want], "in the graph, not in the replay")
    for key, record in want.items():
        if key in got:
            yield from _record_diff(key, got[key], record)


def _record_diff(key: str, got: Record, want: Record) -> Iterator[str]:
    for name, value in want.items():
        if got.get(name) != value:
            yield f"{key}.{name}: {_pair('graph', got.get(name), value)}"


def _absent(keys: list[str], what: str) -> Iterator[str]:
    """One line per kind of node or link: ``Event[3, 4]: missing from the graph``."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        kind, _, rest = key.partition("[")
        by_kind[kind].append(rest.rstrip("]"))
    for kind, names in by_kind.items():
        shown = ", ".join(names[:10]) + (f", … ({len(names)} in all)" if len(names) > 10 else "")
        yield f"{kind}[{shown}]: {what}" if any(names) else f"{kind}: {what}"


def _shared_diff(got: Side, log: _Log, lo: int, hi: int) -> list[Difference]:
    """Agent and Plan nodes: each must hold a value it had between positions ``lo`` and ``hi``."""
    out = []
    for key in sorted(got.keys() | log.shared.keys()):
        held: list[tuple[Record | None, str]] = [(None, "")]
        for position, values, d_id in log.shared.get(key, []):
            if position <= lo:
                held[0] = (values, d_id)
            elif position <= hi:
                held.append((values, d_id))
        found = got.get(key)
        if any(found == values for values, _ in held):
            continue
        want, d_id = held[-1]
        if found is None or want is None:
            details = list(_absent([key], "missing from the graph" if found is None else
                                   "in the graph, not in the replay"))  # fmt: skip
        else:
            details = list(_record_diff(key, found, want))
        out += [Difference("graph", d_id, log.task_id(d_id), detail) for detail in details]
    return out


# ---------------------------------------------------------------- showing values


def _pair(projection: str, found: Any, expected: Any) -> str:
    return f"{projection} {_show(found, expected)}, replay {_show(expected, found)}"


def _show(value: Any, other: Any, width: int = 60) -> str:
    """``value`` for a reader: short, and for long texts the part around the first difference."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, datetime):
        value = value.isoformat()
    if isinstance(value, str) and isinstance(other, str) and len(value) > width:
        start = next(
            (i for i, (a, b) in enumerate(zip(value, other, strict=False)) if a != b), len(other)
        )
        start = max(0, start - width // 3)
        cut = value[start : start + width]
        return ("…" if start else "") + repr(cut) + ("…" if start + width < len(value) else "")
    text = repr(value)
    return text if len(text) <= 2 * width else text[: 2 * width] + "…"
