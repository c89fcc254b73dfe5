"""The embedded graph is stored uncompressed (``projectors.graph.ladybug.COMPRESSION``): a live
fold then only copies the storage groups it rewrites, instead of also decompressing and
recompressing them, which is what kept live lag at 500 events/s above 250 ms at the 99th
percentile on a 100,000-event graph (issue 4). A database an earlier Fleet wrote compressed must
keep working."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from projectors import GraphProjection
from projectors.graph.ladybug import CATCH_UP_EVENTS, LadybugGraph
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)

COUNT = "MATCH (n) RETURN labels(n) AS label, count(n) AS n ORDER BY label"
WINNERS = (
    "MATCH (d:Deliberation)-[:WON_BY]->(p:Proposal) RETURN d.id AS did, p.agent_id AS a"
    " ORDER BY did"
)


def _events(app: Any) -> list[tuple[object, int]]:
    return [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 5000)
    ]


def _size(graph_path: Path) -> int:
    return graph_path.stat().st_size


def _app_with(runs: int) -> Any:
    app = scenarios.popo_app()
    for _ in range(runs):
        scenarios.completed(app)
    return app


def test_the_graph_is_written_uncompressed_by_default(tmp_path: Path) -> None:
    events = _events(_app_with(60))
    sizes = {}
    for name, kwargs in (("default", {}), ("compressed", {"compression": True})):
        graph = LadybugGraph(tmp_path / name, idle_checkpoint_bytes=1, **kwargs)
        try:
            GraphProjection(graph).apply_batch(events, base=0)
            graph.checkpoint()
        finally:
            graph.close()
        sizes[name] = _size(tmp_path / name)
    # Same rows, same statements: only the encoding differs, and it shows in the file.
    assert sizes["default"] > sizes["compressed"]


def test_a_graph_written_compressed_opens_and_keeps_working_uncompressed(tmp_path: Path) -> None:
    app = _app_with(40)
    events = _events(app)
    assert len(events) > CATCH_UP_EVENTS
    half = len(events) // 2
    old = LadybugGraph(tmp_path / "g", compression=True, idle_checkpoint_bytes=1)
    try:
        GraphProjection(old).apply_batch(events[:half], base=0)
        old.checkpoint()  # folded into the file: compressed column chunks on disk
    finally:
        old.close()
    graph = LadybugGraph(tmp_path / "g", live_checkpoint_threshold=16 * 1024)
    reference = LadybugGraph(tmp_path / "ref")
    try:
        projection = GraphProjection(graph)
        assert projection.position() == events[half - 1][1]
        for i in range(half, len(events)):  # live, one event per commit: folds on the way
            projection.apply_batch(events[i : i + 1], base=events[i - 1][1])
        graph.checkpoint()
        GraphProjection(reference).apply_batch(events, base=0)
        assert graph.query(COUNT) == reference.query(COUNT)
        winners = graph.query(WINNERS)
        assert len(winners) == 40 and winners == reference.query(WINNERS)
        assert projection.position() == events[-1][1]
    finally:
        graph.close()
        reference.close()
