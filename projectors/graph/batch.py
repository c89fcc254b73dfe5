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
* SAME rows (a MERGEd shared node or link, a constant status) write the values that are already
  there once the first has run, so they conflict only with writes by *other* statements, and a
  row equal to one already in its execution is dropped (a plan's five deliberations MERGE one
  story-plan link: ORDERED, each took an execution of its own, a layer each on Neo4j);
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
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from application.ports import CypherParams
from projectors.graph.statements import LAST, SAME, Statement

__all__ = ["Execution", "Layers", "plan", "plan_layers"]


@dataclass
class Execution:
    """One statement over many rows: run ``cypher`` with ``{"rows": rows}``."""

    cypher: str
    rows: list[CypherParams] = field(default_factory=list)

    @property
    def params(self) -> dict[str, object]:
        return {"rows": self.rows}


class _Touches:
    """Where a key was last read, and last written, among planned rows.

    The latest write is kept twice over: the latest by any statement, and the latest by any
    statement other than the one that made it. That answers both questions ``_floor`` asks (the
    latest write; the latest by another statement) in constant time: a deliberation's node is
    read by most of its rows, and a max over every statement that wrote it, per row, was a tenth
    of a Neo4j catch-up's Python time.
    """

    __slots__ = ("by", "other", "read", "top")

    def __init__(self) -> None:
        self.read = -1
        self.top = -1  # the latest write
        self.by = ""  # the statement that made it
        self.other = -1  # the latest write by any other statement

    def wrote(self, cypher: str, slot: int) -> None:
        if cypher == self.by:
            self.top = max(self.top, slot)
        elif slot > self.top:
            self.other, self.top, self.by = self.top, slot, cypher
        else:
            self.other = max(self.other, slot)

    def last_write(self, *, other_than: str | None = None) -> int:
        return self.other if other_than == self.by else self.top


def plan(statements: Iterable[Statement]) -> list[Execution]:
    """Group ``statements`` (in stream order) into executions that give the same graph."""
    out: list[Execution] = []
    slots: dict[str, list[int]] = {}  # statement text -> indices of its executions, ascending

    def place(s: Statement, floor: int) -> int:
        mine = slots.setdefault(s.cypher, [])
        at = bisect.bisect_right(mine, floor)
        if at < len(mine):
            return mine[at]
        out.append(Execution(s.cypher))
        mine.append(len(out) - 1)
        return len(out) - 1

    last_rows = _place_all(statements, place, lambda slot: out[slot].rows, lambda: len(out))
    tail: dict[str, Execution] = {}
    for s in last_rows:
        tail.setdefault(s.cypher, Execution(s.cypher)).rows.append(s.params)
    return out + list(tail.values())


@dataclass
class Layers:
    """A plan in layers: layer after layer, and in each the vocabulary's order, one execution per
    statement at most. ``layers[k]`` maps a statement's index in the vocabulary to its rows."""

    layers: list[dict[int, list[CypherParams]]]


def plan_layers(statements: Iterable[Statement], vocabulary: Mapping[str, int]) -> Layers:
    """Group ``statements`` like ``plan``, into slots fixed by a vocabulary instead of made up
    as rows arrive: the slots run layer by layer, and inside a layer in ``vocabulary``'s order
    (statement text -> index). A row takes the first slot of its statement past what it must
    follow, so a batch needs another layer only where a row must follow one of a statement that
    comes later in the vocabulary: with statements in the order an event's life writes them,
    a live batch of a few deliberations fits in one.

    The shape of every plan is then the vocabulary repeated, which is what lets an adapter run
    a whole batch as one query whose text (and so its cached plan) depends on the number of
    layers alone (``projectors.graph.neo4j``). LAST rows go after everything, in the last layer
    when their statements come after every other one in the vocabulary (as they should).

    Raises:
        KeyError: a statement is not in ``vocabulary``.
    """
    width = max(vocabulary.values(), default=0) + 1
    slots: dict[int, list[CypherParams]] = {}
    top = -1

    def after(floor: int, index: int) -> int:
        layer, at = divmod(floor, width) if floor >= 0 else (0, -1)
        return (layer if index > at else layer + 1) * width + index

    def place(s: Statement, floor: int) -> int:
        nonlocal top
        slot = after(floor, vocabulary[s.cypher])
        top = max(top, slot)
        return slot

    last_rows = _place_all(
        statements, place, lambda slot: slots.setdefault(slot, []), lambda: top + 1
    )
    for s in last_rows:
        slots.setdefault(after(top, vocabulary[s.cypher]), []).append(s.params)
    layers: list[dict[int, list[CypherParams]]] = []
    for slot in sorted(slots):
        layer, index = divmod(slot, width)
        while len(layers) <= layer:
            layers.append({})
        layers[layer][index] = slots[slot]
    return Layers(layers)


def _place_all(
    statements: Iterable[Statement],
    place: Callable[[Statement, int], int],
    rows_of: Callable[[int], list[CypherParams]],
    planned: Callable[[], int],
) -> list[Statement]:
    """Put each non-LAST row in the slot ``place`` picks past the latest one it must follow
    (slots are ordered by number); return the LAST rows, reduced to the last one per node."""
    touched: dict[str, _Touches] = {}
    barrier = -1  # the latest slot a row that names nothing went into
    last_rows: dict[tuple[str, str], Statement] = {}
    repeats: set[tuple[int, str, Hashable]] = set()
    for s in statements:
        if s.policy == LAST:
            key = (s.cypher, s.node)
            last_rows.pop(key, None)  # re-insert: keeps the order of the final writes
            last_rows[key] = s
            continue
        chosen = place(s, _floor(s, touched, barrier, planned()))
        if s.policy == SAME:  # a repeat in the same execution would write nothing new
            seen = (chosen, s.cypher, _frozen(s.params))
            if seen in repeats:
                continue
            repeats.add(seen)
        rows_of(chosen).append(s.params)
        if not s.reads and not s.writes:
            barrier = max(barrier, chosen)
        for thing in s.reads:
            t = touched.get(thing)
            if t is None:
                t = touched[thing] = _Touches()
            t.read = max(t.read, chosen)
        for thing in s.writes:
            t = touched.get(thing)
            if t is None:
                t = touched[thing] = _Touches()
            t.wrote(s.cypher, chosen)
    return list(last_rows.values())


def _frozen(params: CypherParams) -> Hashable:
    """``params`` as a set member: its items (rows of a statement are built with their keys in
    one order), or their text when a value is a list."""
    items = tuple(params.items())
    try:
        hash(items)
    except TypeError:
        return repr(items)
    return items


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
