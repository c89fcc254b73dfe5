"""Batches of every size run on LadybugDB statements prepared for that size."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from projectors import GraphProjection
from projectors.graph.ladybug import LadybugGraph
from projectors.verify import verify
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def _events(app: Any) -> list[tuple[object, int]]:
    return [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 10_000)
    ]


def _ours(app: Any) -> int:
    return sum(1 for e, _ in _events(app) if type(e).__module__.startswith("aggregates"))


def test_each_statement_text_runs_with_row_counts_of_one_size_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LadybugDB keeps a prepared statement's first values: a text first run with a catch-up
    # batch's rows made every later live run of it pay for those rows (tens of ms per commit).
    app = scenarios.popo_app()
    for _ in range(6):
        scenarios.completed(app)
        scenarios.timed_out(app)
        scenarios.all_failed(app)
    events = _events(app)
    graph = LadybugGraph(tmp_path / "g")
    counts: dict[str, list[int]] = defaultdict(list)
    execute = graph._write.execute

    def recording(query: Any, parameters: dict[str, Any] | None = None) -> Any:
        rows = (parameters or {}).get("rows")
        if isinstance(query, str) and isinstance(rows, list):
            counts[query].append(len(rows))
        return execute(query, parameters)

    monkeypatch.setattr(graph._write, "execute", recording)
    try:
        projection = GraphProjection(graph)
        big = len(events) // 2
        projection.apply_batch(events[:big], base=0)  # a catch-up, then live batches
        for size in (1, 1, 3, 1, 7, 2, 1, 16, 1, 5):
            chunk, events[big:] = events[big : big + size], events[big + size :]
            projection.apply_batch(chunk, base=projection.position())
        projection.apply_batch(events[big:], base=projection.position())

        sizes = [n for ns in counts.values() for n in ns]
        assert max(sizes) >= 16 and min(sizes) == 1  # both kinds ran
        spread = {
            " ".join(q.split())[:90]: ns for q, ns in counts.items() if max(ns) >= 2 * min(ns)
        }
        assert not spread  # no text ran with row counts a factor of 2 apart
        report = verify(app, graph=graph)
        assert report.ok, report.differences
    finally:
        graph.close()
