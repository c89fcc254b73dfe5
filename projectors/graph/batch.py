"""Catch-up batching: many events' statements as few ``UNWIND $rows`` executions, same result.

Every statement reads one row ``r`` of ``$rows`` (see ``statements``), so rows of the same
statement from many events can run as one execution. Reordering must not change the result the
one-event-at-a-time path gives; ``plan`` keeps these rules (greedy, one pass, in stream order).
Each row names what it reads and writes (``Statement.reads``/``writes``); a row joins the earliest
execution of its statement that comes after every earlier row it conflicts with:

* it reads what an earlier row wrote (it must see the write);
* it writes what an earlier row read or wrote (the earlier row must not see it, and the last
  write must win), so two rows writing one thing never share an execution (engines disagree on
  which of two rows for one key wins inside one UNWIND);
* SAME rows (a MERGEd shared node, a constant status) write the values that are already there
  once the first has run, so they conflict only with writes by *other* statements;
* a row that names neither reads nor writes is ordered after every row before it;
* LAST rows (a property only the final value of which matters, like ``d.version``) are reduced to
  the last row per node and run after everything else.

Rows that do not conflict commute, so the steps of one deliberation share executions as long as
they touch different things (its three proposals, say). Ordering by deliberation alone, as this
module first did, made a batch as many executions deep as a deliberation has steps (~35 for a
9-event deliberation), which cost a live batch of a few events ~100 ms on a large LadybugDB
graph: each execution has a fixed cost there. Pure; no I/O.
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

    @property
    def params(self) -> dict[str, Any]:
        return {"rows": self.rows}


@dataclass
class _Touches:
    """Where a key was last read, and last written by each statement, among planned rows."""

    read: int = -1
    written: dict[str, int] = field(default_factory=dict)

    def last_write(self, *, other_than: str | None = None) -> int:
        return max((i for c, i in self.written.items() if c != other_than), default=-1)


def plan(statements: Iterable[Statement]) -> list[Execution]:
    """Group ``statements`` (in stream order) into executions that give the same graph."""
    out: list[Execution] = []
    slots: dict[str, list[int]] = {}  # statement text -> indices of its executions, ascending
    touched: dict[str, _Touches] = {}
    barrier = -1  # the latest execution a row that names nothing went into
    last_rows: dict[tuple[str, str], Statement] = {}
    for s in statements:
        if s.policy == LAST:
            key = (s.cypher, s.node)
            last_rows.pop(key, None)  # re-insert: keeps the order of the final writes
            last_rows[key] = s
            continue
        floor = _floor(s, touched, barrier, len(out))
        mine = slots.setdefault(s.cypher, [])
        at = bisect.bisect_right(mine, floor)
        if at < len(mine):
            chosen = mine[at]
        else:
            out.append(Execution(s.cypher))
            chosen = len(out) - 1
            mine.append(chosen)
        out[chosen].rows.append(s.params)
        if not s.reads and not s.writes:
            barrier = max(barrier, chosen)
        for thing in s.reads:
            t = touched.setdefault(thing, _Touches())
            t.read = max(t.read, chosen)
        for thing in s.writes:
            t = touched.setdefault(thing, _Touches())
            t.written[s.cypher] = max(t.written.get(s.cypher, -1), chosen)
    tail: dict[str, Execution] = {}
    for s in last_rows.values():
        tail.setdefault(s.cypher, Execution(s.cypher)).rows.append(s.params)
    return out + list(tail.values())


def _floor(s: Statement, touched: Mapping[str, _Touches], barrier: int, planned: int) -> int:
    """The latest execution ``s`` must come after."""
    if not s.reads and not s.writes:
        return planned - 1
    floor = barrier
    for key in s.reads:
        t = touched.get(key)
        if t is not None:
            floor = max(floor, t.last_write())
    for key in s.writes:
        t = touched.get(key)
        if t is None:
            continue
        if s.policy == SAME:
            floor = max(floor, t.last_write(other_than=s.cypher))
        else:
            floor = max(floor, t.last_write(), t.read)
    return floor
