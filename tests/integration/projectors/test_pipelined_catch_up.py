"""A catch-up is pipelined: the runner stages the next full batch while its writer thread writes
the one before, and a write that fails in flight loses nothing and applies nothing twice."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from application.app import FleetApplication
from projectors import GraphProjection, ProjectorRunner
from projectors.fence import Fence
from projectors.graph.ladybug import LadybugGraph
from projectors.verify import verify
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


class StoreDown(Exception):
    """The store went away in the middle of a write (what ``retry_on`` names in Fleet)."""


class _Observed(GraphProjection):
    """Logs stages and writes by their batch's last position; holds the first write until the
    batch after it is staged, and can fail one write once."""

    def __init__(self, graph: LadybugGraph, *, fail_write: int | None = None) -> None:
        super().__init__(graph)
        self.log: list[tuple[str, int, str]] = []
        self.second_staged = threading.Event()
        self.fail_write = fail_write
        self.writes = 0

    def stage(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> Callable[[], int]:
        last = items[-1][1]
        self.log.append(("staged", last, threading.current_thread().name))
        if len([e for e in self.log if e[0] == "staged"]) == 2:
            self.second_staged.set()
        write = super().stage(items, base=base, fence=fence)

        def observed() -> int:
            self.writes += 1
            if self.writes == 1:
                assert self.second_staged.wait(20)  # the next batch is staged meanwhile
            if self.writes == self.fail_write:
                raise StoreDown(f"lost the store writing up to {last}")
            applied = write()
            self.log.append(("written", last, threading.current_thread().name))
            return applied

        return observed


def _backlog() -> tuple[FleetApplication, int]:
    app = scenarios.popo_app()
    for _ in range(3):
        scenarios.completed(app)
        scenarios.timed_out(app)
    return app, app.recorder.max_notification_id() or 0


def test_the_next_batch_is_staged_while_the_one_before_is_written(tmp_path: Path) -> None:
    app, head = _backlog()
    graph = LadybugGraph(tmp_path / "g")
    projection = _Observed(graph)
    try:
        with ProjectorRunner(app, projection, batch_size=5) as runner:
            runner.wait(head, timeout=30)
        staged = [last for kind, last, _ in projection.log if kind == "staged"]
        written = [last for kind, last, _ in projection.log if kind == "written"]
        assert written == staged  # every batch written once, in order
        log = projection.log
        first_write = next(i for i, (kind, _, _) in enumerate(log) if kind == "written")
        second_stage = [i for i, (kind, _, _) in enumerate(log) if kind == "staged"][1]
        assert second_stage < first_write  # staged while the first batch was being written
        assert log[first_write][2].startswith("write-")  # a full batch: by the writer thread
        report = verify(app, graph=graph)
        assert report.ok, report.differences
    finally:
        graph.close()


def test_a_write_failing_in_flight_resumes_from_the_store_and_applies_each_event_once(
    tmp_path: Path,
) -> None:
    app, head = _backlog()
    graph = LadybugGraph(tmp_path / "g")
    projection = _Observed(graph, fail_write=2)
    try:
        runner = ProjectorRunner(app, projection, batch_size=5, retry_on=(StoreDown,))
        with runner:
            runner.wait(head, timeout=30)
        written = [last for kind, last, _ in projection.log if kind == "written"]
        assert written == sorted(set(written))  # nothing written twice
        ours = sum(
            1
            for n in app.recorder.select_notifications(1, 10_000)
            if type(app.mapper.to_domain_event(n)).__module__.startswith("aggregates")
        )
        assert runner.applied == ours
        report = verify(app, graph=graph)
        assert report.ok, report.differences
    finally:
        graph.close()
