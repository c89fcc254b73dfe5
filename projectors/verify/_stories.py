"""The graph's stories against the log: each phase change a PhaseChange node with its values on
its story, each story's phase its last change's, each deliberation and plan of a story linked.

A live node projects while it is read: what the log says up to the graph's position read before
must be there exactly; what came after may or may not be; what no event explains is a
difference either way. Read with the topics filter, so the pass decodes only the events that
make stories.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.utils import get_topic

from aggregates import Deliberation, Plan
from aggregates.story import Story
from projectors.graph.port import DecisionGraph
from projectors.verify._report import Difference

__all__ = ["story_differences"]

_PAGE = 1000
_ALL = 10**9
_TIMEOUT_S = 300.0
_CHANGES = """
MATCH (s:Story)-[:CHANGED_PHASE]->(c:PhaseChange)
RETURN s.id AS story, c.id AS id, c.seq AS seq, c.from_phase AS from_phase,
    c.to_phase AS to_phase, c.at AS at
"""
_PHASES = "MATCH (s:Story) RETURN s.id AS story, s.phase AS phase"
_DELIBERATIONS = (
    "MATCH (s:Story)-[:HAS_DELIBERATION]->(d:Deliberation) RETURN s.id AS story, d.id AS id"
)
_PLANS = "MATCH (s:Story)-[:HAS_PLAN]->(p:Plan) RETURN s.id AS story, p.id AS id"

Fact = tuple[str, ...]


def story_differences(
    app: Application[UUID], graph: DecisionGraph, name: str = "graph"
) -> list[Difference]:
    """Where the graph's stories differ from the log (empty when they agree)."""
    lo = graph.position(name)
    found = _read(graph)
    hi = graph.position(name)
    expected, phases = _expected(app, hi)
    out: list[Difference] = []
    for fact, position in expected.items():
        if position <= lo and fact not in found:
            out.append(Difference("graph", fact[1], "", f"story {fact[1]}: {_show(fact)} missing"))
    for fact in found:
        if fact[0] != "phase" and fact not in expected:
            detail = f"story {fact[1]}: {_show(fact)} follows from no event"
            out.append(Difference("graph", fact[1], "", detail))
    for fact in (f for f in found if f[0] == "phase"):
        want = phases.get(fact[1])
        if want is not None and want[0] <= lo and fact[2] != want[1]:
            detail = f"story {fact[1]}: graph phase {fact[2]!r}, replay {want[1]!r}"
            out.append(Difference("graph", fact[1], "", detail))
    return out


def _show(fact: Fact) -> str:
    kind, _, *rest = fact
    return f"{kind} {' '.join(rest)}"


def _read(graph: DecisionGraph) -> set[Fact]:
    def rows(cypher: str) -> list[Any]:
        return graph.query(cypher, None, limit=_ALL, timeout_s=_TIMEOUT_S)

    found: set[Fact] = set()
    for r in rows(_CHANGES):
        values = (r["id"], str(r["seq"]), r["from_phase"], r["to_phase"], r["at"])
        found.add(("PhaseChange", str(r["story"]), *map(str, values)))
    found |= {("phase", str(r["story"]), str(r["phase"])) for r in rows(_PHASES)}
    found |= {("HAS_DELIBERATION", str(r["story"]), str(r["id"])) for r in rows(_DELIBERATIONS)}
    found |= {("HAS_PLAN", str(r["story"]), str(r["id"])) for r in rows(_PLANS)}
    return found


def _expected(
    app: Application[UUID], stop: int
) -> tuple[dict[Fact, int], dict[str, tuple[int, str]]]:
    """Each fact the log up to ``stop`` leads to, with the position that introduced it, and
    each story's last phase with its position."""
    topics = [
        get_topic(Story.PhaseChanged),
        get_topic(Deliberation.Requested),
        get_topic(Plan.Approved),
    ]
    facts: dict[Fact, int] = {}
    phases: dict[str, tuple[int, str]] = {}
    start = 1
    while start <= stop:
        page = app.recorder.select_notifications(start, _PAGE, stop=stop, topics=topics)
        if not page:
            break
        for n in page:
            e: Any = app.mapper.to_domain_event(n)
            if isinstance(e, Story.PhaseChanged):
                change = f"{e.originator_id}:{e.originator_version}"
                values = (change, str(n.id), e.from_phase, e.to_phase, e.at.isoformat())
                facts[("PhaseChange", e.story_id, *values)] = n.id
                phases[e.story_id] = (n.id, e.to_phase)
            elif isinstance(e, Plan.Approved):  # a plan is on its story from its approval on
                facts.setdefault(("HAS_PLAN", e.story_id, e.plan_id), n.id)
            elif e.story_id:
                facts[("HAS_DELIBERATION", e.story_id, str(e.originator_id))] = n.id
                if e.plan_id:
                    facts.setdefault(("HAS_PLAN", e.story_id, e.plan_id), n.id)
        start = page[-1].id + 1
    return facts, phases
