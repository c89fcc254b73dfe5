"""Verification: replay every deliberation and compare it with the graph and the cache.

Positions move while a live node is verified, so each projection is compared at the version it
should hold: the versions of a deliberation at the projection's position read before and after
its rows are read bound what it may hold; a cached entry must equal the replay at its own version,
and the graph's node and links must match the replay at the node's version. A missing cache entry
is not a difference (a miss falls back to a replay; terminal entries expire) but is counted.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.utils import get_topic

from aggregates import Deliberation
from projectors.cache.board import DeliberationBoard
from projectors.cache.view import view_from_aggregate
from projectors.graph.port import DecisionGraph

__all__ = ["Difference", "VerifyReport", "verify"]

_PAGE = 1000
_ALL = 10**9

_GRAPH_NODES = """
MATCH (d:Deliberation)
OPTIONAL MATCH (d)-[:HAD_EVENT]->(e:Event)
WITH d, count(e) AS events
OPTIONAL MATCH (d)-[:WON_BY]->(w:Proposal)
RETURN d.id AS id, d.task_id AS task_id, d.status AS status, d.version AS version,
       d.winner AS winner, events, w.agent_id AS won_by
"""
_GRAPH_PROPOSALS = """
MATCH (d:Deliberation)-[:HAS_PROPOSAL]->(p:Proposal)
RETURN d.id AS id, p.agent_id AS agent, p.round AS round, p.late AS late, p.score AS score
"""


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
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


class _Versions:
    """Each deliberation's (position, version) along the log, up to a head."""

    def __init__(self, app: Application[Any], head: int) -> None:
        prefix = get_topic(Deliberation) + "."
        self.by_id: dict[UUID, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        start = 1
        while start <= head:
            page = app.recorder.select_notifications(start, _PAGE, stop=head)
            if not page:
                break
            for n in page:
                if n.topic.startswith(prefix):
                    positions, versions = self.by_id[UUID(str(n.originator_id))]
                    positions.append(n.id)
                    versions.append(n.originator_version)
            start = page[-1].id + 1

    def at(self, d_id: UUID, position: int) -> int:
        """The deliberation's version once the log is applied up to ``position`` (0: none)."""
        positions, versions = self.by_id.get(d_id, ([], []))
        i = bisect.bisect_right(positions, position)
        return versions[i - 1] if i else 0


def verify(
    app: Application[Any],
    *,
    graph: DecisionGraph | None = None,
    graph_name: str = "graph",
    board: DeliberationBoard | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Compare the graph and the cache with a replay of every deliberation."""
    positions_before = {}
    if graph is not None:
        positions_before["graph"] = graph.position(graph_name)
    if board is not None:
        positions_before["cache"] = board.position()
    head = app.recorder.max_notification_id() or 0
    report = VerifyReport(head=head, positions=dict(positions_before))
    graph_rows: dict[str, dict[str, Any]] = {}
    proposals: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if graph is not None:
        graph_rows = {r["id"]: r for r in graph.query(_GRAPH_NODES, limit=_ALL)}
        for r in graph.query(_GRAPH_PROPOSALS, limit=_ALL):
            proposals[r["id"]].append(r)
    positions_after = dict(positions_before)
    if graph is not None:
        positions_after["graph"] = graph.position(graph_name)
    versions = _Versions(app, max([head, *positions_after.values()]))
    ids = list(versions.by_id)
    report.deliberations = len(ids)
    for done, d_id in enumerate(ids, start=1):
        for diff in _check(app, d_id, versions, positions_before, positions_after, graph_rows,
                           proposals, board, report):  # fmt: skip
            report.differences.append(diff)
        if on_progress is not None:
            on_progress(done, len(ids))
    return report


def _check(
    app: Application[Any],
    d_id: UUID,
    versions: _Versions,
    before: dict[str, int],
    after: dict[str, int],
    graph_rows: dict[str, dict[str, Any]],
    proposals: dict[str, list[dict[str, Any]]],
    board: DeliberationBoard | None,
    report: VerifyReport,
) -> Iterator[Difference]:
    replays: dict[int, Deliberation] = {}

    def replay(version: int) -> Deliberation:
        if version not in replays:
            replays[version] = app.repository.get(d_id, version=version)
        return replays[version]

    task_id = replay(versions.at(d_id, 10**18)).task_id if versions.by_id[d_id][1] else ""
    if board is not None:
        lo = versions.at(d_id, before["cache"])
        view = board.get(d_id)
        if view is None:
            report.cache_misses += 1
        elif not lo <= view.version or view.version > versions.at(d_id, board.position()):
            detail = f"cached version {view.version}, expected at least {lo}"
            yield Difference("cache", str(d_id), task_id, detail)
        else:
            expected = view_from_aggregate(replay(view.version))
            if view != expected:
                yield Difference("cache", str(d_id), task_id, _view_diff(view, expected))
    if "graph" in before:
        lo, hi = versions.at(d_id, before["graph"]), versions.at(d_id, after["graph"])
        row = graph_rows.get(str(d_id))
        if row is None:
            if hi > 0:
                yield Difference("graph", str(d_id), task_id, "no Deliberation node")
            return
        version = int(row["version"] or 0)
        if not lo <= version <= hi:
            detail = f"graph at version {version}, expected {lo}..{hi}"
            yield Difference("graph", str(d_id), task_id, detail)
            return
        yield from _graph_diff(replay(version), row, proposals.get(str(d_id), []), task_id)


def _graph_diff(
    d: Deliberation, row: dict[str, Any], proposals: list[dict[str, Any]], task_id: str
) -> Iterator[Difference]:
    def diff(detail: str) -> Difference:
        return Difference("graph", str(d.id), task_id, detail)

    expected = {
        "task_id": d.task_id,
        "status": d.status.value,
        "events": d.version,
        "winner": str(d.winner) if d.winner is not None else None,
        "won_by": str(d.winner) if d.winner is not None else None,
    }
    for key, value in expected.items():
        if row[key] != value:
            yield diff(f"{key} is {row[key]!r}, replay says {value!r}")
    on_time = {
        (str(p.agent_id), p.round): p
        for round_no in range(d.rounds + 1)
        for p in d.round_proposals(round_no)
    }
    got = {(p["agent"], p["round"]): p for p in proposals if not p["late"]}
    if set(got) != set(on_time):
        yield diff(f"proposals {sorted(got)} but replay has {sorted(on_time)}")
        return
    final = {str(a): p for a, p in d.final_proposals().items()}
    for (agent, round_no), p in got.items():
        want = final[agent].score if final.get(agent) and final[agent].round == round_no else None
        if p["score"] != want:
            yield diff(f"proposal {agent}/{round_no} score {p['score']!r}, replay says {want!r}")
    late = sum(1 for p in proposals if p["late"])
    if late != len(d.late):
        yield diff(f"{late} late proposals, replay has {len(d.late)}")


def _view_diff(got: Any, want: Any) -> str:
    fields = [f for f in vars(want) if f != "position" and getattr(got, f) != getattr(want, f)]
    return "cache differs from replay in " + ", ".join(fields or ["(equal fields?)"])
