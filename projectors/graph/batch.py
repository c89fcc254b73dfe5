"""Catch-up batching: many events' statements as few ``UNWIND $rows`` executions, same result.

Every statement reads one row ``r`` of ``$rows`` (see ``statements``), so rows of the same
statement from many events can run as one execution. Reordering must not change the result the
one-event-at-a-time path gives; ``plan`` keeps these rules (greedy, one pass, in stream order):

* rows of one deliberation (``Statement.chain``) run in their stream order: a row joins the
  earliest execution of its statement that comes after its deliberation's previous row;
* an ORDERED row never shares an execution with another row writing the same node (engines
  disagree on which of two rows for one key wins inside one UNWIND); SAME rows may, since they
  write the same values;
* LAST rows (a property only the final value of which matters, like ``d.version``) are reduced to
  the last row per node and run after everything else.

Rows of different deliberations commute: they write different nodes, except shared Agent and
Plan nodes, whose writes are SAME (constant role, story) or LAST (model). Pure; no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from projectors.graph.statements import LAST, SAME, Statement

__all__ = ["Execution", "plan"]


@dataclass
class Execution:
    """One statement over many rows: run ``cypher`` with ``{"rows": rows}``."""

    cypher: str
    rows: list[Mapping[str, Any]] = field(default_factory=list)
    _nodes: set[str] = field(default_factory=set, repr=False)

    @property
    def params(self) -> dict[str, Any]:
        return {"rows": self.rows}


def plan(statements: Iterable[Statement]) -> list[Execution]:
    """Group ``statements`` (in stream order) into executions that give the same graph."""
    out: list[Execution] = []
    slots: dict[str, list[int]] = {}  # statement text -> indices of its executions, ascending
    after: dict[str, int] = {}  # deliberation -> index of the last execution holding its rows
    last_rows: dict[tuple[str, str], Statement] = {}
    for s in statements:
        if s.policy == LAST:
            key = (s.cypher, s.node)
            last_rows.pop(key, None)  # re-insert: keeps the order of the final writes
            last_rows[key] = s
            continue
        # The earliest execution of this statement after this deliberation's previous row, so
        # deliberations at the same step share executions however they interleave.
        mine = slots.setdefault(s.cypher, [])
        floor = after.get(s.chain, -1) if s.chain else -1
        chosen = -1
        for i in mine[bisect.bisect_left(mine, floor) :]:
            if s.policy == SAME or not s.node or s.node not in out[i]._nodes:
                chosen = i
                break
        if chosen < 0:
            out.append(Execution(s.cypher))
            chosen = len(out) - 1
            mine.append(chosen)
        out[chosen].rows.append(s.params)
        out[chosen]._nodes.add(s.node)
        if s.chain:
            after[s.chain] = chosen
    tail: dict[str, Execution] = {}
    for s in last_rows.values():
        tail.setdefault(s.cypher, Execution(s.cypher)).rows.append(s.params)
    return out + list(tail.values())
