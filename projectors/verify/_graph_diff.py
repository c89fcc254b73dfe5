"""The graph compared: a deliberation's records found against those expected, and the shared Agent
and Plan nodes against the values they took while the graph was read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from projectors.verify._graph_read import Side
from projectors.verify._log_scan import Log, Record
from projectors.verify._report import Difference, pair


def side_diff(got: Side, want: Side) -> Iterator[str]:
    yield from _absent([k for k in want if k not in got], "missing from the graph")
    yield from _absent([k for k in got if k not in want], "in the graph, not in the replay")
    for key, record in want.items():
        if key in got:
            yield from _record_diff(key, got[key], record)


def _record_diff(key: str, got: Record, want: Record) -> Iterator[str]:
    for name, value in want.items():
        if got.get(name) != value:
            yield f"{key}.{name}: {pair('graph', got.get(name), value)}"


def _absent(keys: list[str], what: str) -> Iterator[str]:
    """One line per kind of node or link: ``Event[3, 4]: missing from the graph``."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        kind, _, rest = key.partition("[")
        by_kind[kind].append(rest.rstrip("]"))
    for kind, names in by_kind.items():
        shown = ", ".join(names[:10]) + (f", … ({len(names)} in all)" if len(names) > 10 else "")
        yield f"{kind}[{shown}]: {what}" if any(names) else f"{kind}: {what}"


def shared_diff(got: Side, log: Log, lo: int, hi: int) -> list[Difference]:
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
