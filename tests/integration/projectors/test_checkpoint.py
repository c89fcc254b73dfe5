"""The graph's checkpoint hook: LadybugDB folds its write-ahead log when the runner goes idle,
once the log is large enough to be worth the pause. LadybugDB's alone: Neo4j checkpoints on its
own schedule, and its adapter's ``checkpoint`` is a no-op."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from application.app import FleetApplication
from projectors import GraphProjection, ProjectorRunner
from projectors.fence import Fence
from projectors.graph.ladybug import CATCH_UP_EVENTS, CHECKPOINT_THRESHOLD, LadybugGraph
from tests.support.waiting import eventually_sync
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def _wal_bytes(graph: LadybugGraph) -> int:
    """The WAL's size; a checkpoint may remove the file between any two looks, so one stat."""
    wal = graph.path.with_name(graph.path.name + ".wal")
    try:
        return wal.stat().st_size
    except FileNotFoundError:
        return 0


def _events(app: Any) -> list[tuple[object, int]]:
    return [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 1000)
    ]


def test_the_adapter_raises_the_automatic_checkpoint_threshold(tmp_path: Path) -> None:
    graph = LadybugGraph(tmp_path / "g", checkpoint_threshold=CHECKPOINT_THRESHOLD)
    try:
        result = graph._write.execute("CALL current_setting('checkpoint_threshold') RETURN *")
        assert int(result.get_next()[0]) == CHECKPOINT_THRESHOLD  # type: ignore[union-attr]
    finally:
        graph.close()


def _threshold(graph: LadybugGraph) -> int:
    result = graph._write.execute("CALL current_setting('checkpoint_threshold') RETURN *")
    return int(result.get_next()[0])  # type: ignore[union-attr]


def test_live_batches_fold_the_log_often_and_catch_up_batches_seldom(tmp_path: Path) -> None:
    # A fold stalls every commit for its length, which grows with the log: a live stream
    # with no quiet spell must meet many short ones, never one of seconds (issue 4's lag).
    app = scenarios.popo_app()
    for _ in range(40):
        scenarios.completed(app)
    events = _events(app)
    assert len(events) > CATCH_UP_EVENTS + 100
    live_threshold = 32 * 1024
    graph = LadybugGraph(
        tmp_path / "g",
        checkpoint_threshold=CHECKPOINT_THRESHOLD,
        live_checkpoint_threshold=live_threshold,
        idle_checkpoint_bytes=1 << 40,  # no idle folds here: only the engine's own
    )
    reference = LadybugGraph(tmp_path / "ref")
    try:
        projection = GraphProjection(graph)
        projection.apply_batch(events[:CATCH_UP_EVENTS], base=0)  # catch-up: one big batch
        assert graph.checkpoint_threshold == _threshold(graph) == CHECKPOINT_THRESHOLD
        assert _wal_bytes(graph) > live_threshold  # kept whole: no fold in the catch-up
        sizes = []
        for i in range(CATCH_UP_EVENTS, len(events)):  # live: one event per commit
            projection.apply_batch(events[i : i + 1], base=events[i - 1][1])
            sizes.append(_wal_bytes(graph))
        assert graph.checkpoint_threshold == _threshold(graph) == live_threshold
        folds = sum(1 for a, b in itertools.pairwise(sizes) if b < a)
        assert folds >= 2 and max(sizes) < 2 * live_threshold
        GraphProjection(reference).apply_batch(events, base=0)
        count = "MATCH (n) RETURN labels(n) AS label, count(n) AS n ORDER BY label"
        assert graph.query(count) == reference.query(count)
        assert projection.position() == events[-1][1]
    finally:
        graph.close()
        reference.close()


def test_checkpoint_empties_the_log_and_keeps_the_data(tmp_path: Path) -> None:
    app = scenarios.popo_app()
    scenarios.completed(app)
    graph = LadybugGraph(tmp_path / "g", idle_checkpoint_bytes=0)
    try:
        projection = GraphProjection(graph)
        events = _events(app)
        projection.apply_batch(events, base=0)
        assert _wal_bytes(graph) > 0
        before = graph.query("MATCH (n) RETURN count(n) AS n")
        projection.idle()
        assert _wal_bytes(graph) == 0
        assert graph.query("MATCH (n) RETURN count(n) AS n") == before
        assert projection.position() == events[-1][1]
    finally:
        graph.close()


def test_a_log_below_the_idle_bound_is_left_alone(tmp_path: Path) -> None:
    # A checkpoint's fixed cost grows with the graph; after a small burst it is not worth it.
    app = scenarios.popo_app()
    scenarios.completed(app)
    graph = LadybugGraph(tmp_path / "g")
    try:
        GraphProjection(graph).apply_batch(_events(app), base=0)
        logged = _wal_bytes(graph)
        assert graph.log_bytes() == logged > 0
        graph.idle_checkpoint_bytes = logged + 1
        graph.checkpoint()
        assert _wal_bytes(graph) == logged
        graph.idle_checkpoint_bytes = logged
        graph.checkpoint()
        assert _wal_bytes(graph) == 0
    finally:
        graph.close()


class _Counting(GraphProjection):
    """Counts the runner's ``idle()`` calls and logs them among the batches (by their last
    position); clearing ``gate`` holds the next batch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idles = 0
        self.calls: list[int | str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def stage(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> Callable[[], int]:
        write = super().stage(items, base=base, fence=fence)

        def gated() -> int:
            self.entered.set()
            assert self.gate.wait(20)
            self.calls.append(items[-1][1])
            return write()

        return gated

    def idle(self) -> None:
        self.idles += 1
        self.calls.append("idle")
        super().idle()


def _backlog(tmp_path: Path) -> tuple[FleetApplication, LadybugGraph, _Counting]:
    """Three deliberations to catch up on, and a graph that folds any log when asked."""
    app = scenarios.popo_app()
    for _ in range(3):
        scenarios.completed(app)
    graph = LadybugGraph(tmp_path / "g", idle_checkpoint_bytes=0)
    return app, graph, _Counting(graph)


def test_the_runner_checkpoints_after_a_catch_up_and_when_idle(tmp_path: Path) -> None:
    app, graph, projection = _backlog(tmp_path)
    try:
        with ProjectorRunner(app, projection, batch_size=4, idle_s=0.2) as runner:
            runner.wait(app.recorder.max_notification_id() or 0)
            eventually_sync(lambda: projection.idles >= 1 and _wal_bytes(graph) == 0)
            idles = projection.idles
            scenarios.completed(app)  # live writes, then quiet: one more checkpoint
            runner.wait(app.recorder.max_notification_id() or 0)
            eventually_sync(lambda: projection.idles > idles and _wal_bytes(graph) == 0)
            time.sleep(0.5)  # nothing written since: no further checkpoints
            assert projection.idles == idles + 1
    finally:
        graph.close()


def test_a_burst_while_live_is_no_catch_up_and_checkpoints_nothing(tmp_path: Path) -> None:
    # A checkpoint stalls every write for its length (seconds on a large graph with a full
    # log); run in the middle of a stream that briefly fell behind, it made the runner fall
    # further behind, and checkpoint again.
    app, graph, projection = _backlog(tmp_path)
    try:
        with ProjectorRunner(app, projection, batch_size=4, idle_s=60) as runner:
            runner.wait(app.recorder.max_notification_id() or 0)
            eventually_sync(lambda: projection.idles == 1)  # the catch-up drained
            projection.gate.clear()
            projection.entered.clear()
            first = scenarios.all_failed(app)  # 6 events: the first one's commit is held...
            assert projection.entered.wait(10)
            projection.gate.set()  # ...and the rest go in full batches behind it
            runner.wait(first.position)
            time.sleep(0.5)
            assert projection.idles == 1 and _wal_bytes(graph) > 0
    finally:
        projection.gate.set()
        graph.close()


def test_the_catch_up_checkpoints_when_applied_though_live_events_are_queued(
    tmp_path: Path,
) -> None:
    # At 500 events/s the queue is seldom empty after a commit: waiting for an empty one put
    # the catch-up's checkpoint at a random moment of the live stream instead of before it.
    app, graph, projection = _backlog(tmp_path)
    backlog = app.recorder.max_notification_id() or 0
    projection.gate.clear()
    try:
        with ProjectorRunner(app, projection, batch_size=4, idle_s=60) as runner:
            assert projection.entered.wait(10)  # the first catch-up batch is held...
            live = scenarios.all_failed(app)  # ...while live events queue behind the backlog
            projection.gate.set()
            runner.wait(live.position)
            done = next(i for i, c in enumerate(projection.calls) if c != "idle" and c >= backlog)
            assert projection.calls[done + 1] == "idle"  # right after the backlog's last batch
            assert projection.calls.count("idle") == 1 and projection.calls[-1] == live.position
    finally:
        projection.gate.set()
        graph.close()
