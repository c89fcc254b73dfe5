"""Loading a deliberation from the store, beside the library's own fold of the same events.

Run: ``.venv/bin/python bench/load_bench.py [--loads 2000]``

One completed-and-debated deliberation (16 events) in an in-memory ``FleetApplication``; then,
each timed ``--loads`` times: the library's ``project_aggregate`` over its events and
``application.app.fold`` over the same events; then ``FleetApplication.repository.get`` folding
with the library's function (as it did before) and with ``fold`` (its default).
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventsourcing.application import project_aggregate
from eventsourcing.domain import DomainEventProtocol

from aggregates import Deliberation
from application.app import fold
from tests.unit.projectors import scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=2000)
    args = parser.parse_args()
    loads: int = args.loads
    app = scenarios.popo_app()
    d_id = scenarios.debated(app).deliberation_id
    events = list(app.events.get(d_id))

    def per_call_us(call: Callable[[], object]) -> float:
        best: float = min(timeit.repeat(call, number=loads, repeat=3))
        return best / loads * 1e6

    def library_fold(
        aggregate: Deliberation | None, folded: Iterable[DomainEventProtocol[Any]]
    ) -> Deliberation | None:
        return project_aggregate(aggregate, folded)

    def load_with_library() -> Deliberation:
        loaded: Deliberation = app.repository.get(d_id, projector_func=library_fold)
        return loaded

    library = per_call_us(lambda: project_aggregate(None, events))
    ours = per_call_us(lambda: fold(None, events))
    before = per_call_us(load_with_library)
    loaded = per_call_us(lambda: app.repository.get(d_id))
    print(f"one deliberation of {len(events)} events, {args.loads} times each, best of 3")
    print(f"  fold: library project_aggregate    {library:6.0f} µs")
    print(f"  fold: application.app.fold         {ours:6.0f} µs  ({ours / library:.2f}×)")
    print(f"  repository.get, library fold       {before:6.0f} µs")
    print(f"  repository.get, fold (the default) {loaded:6.0f} µs  ({loaded / before:.2f}×)")


if __name__ == "__main__":
    main()
