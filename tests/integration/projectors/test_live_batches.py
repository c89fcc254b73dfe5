"""Live batching on a real graph: what arrives during a commit goes in the next one (group commit)
and stays exactly-once through a redelivery in its middle; statements of every batch size run on
LadybugDB statements prepared for that size."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import Notification

from projectors import GraphProjection, ProjectorRunner
from projectors.fence import Fence
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.port import DecisionGraph
from projectors.verify import verify
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def _events(app: Any) -> list[tuple[object, int]]:
    return [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 10_000)
    ]


def _ours(app: Any) -> int:
    return sum(1 for e, _ in _events(app) if type(e).__module__.startswith("aggregates"))


class _Held(GraphProjection):
    """Holds its first batch until released, as a slow commit would, so events queue behind."""

    def __init__(self, graph: DecisionGraph) -> None:
        super().__init__(graph)
        self.entered = threading.Event()
        self.go = threading.Event()
        self.calls: list[list[int]] = []

    def stage(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> Callable[[], int]:
        write = super().stage(items, base=base, fence=fence)

        def held() -> int:
            self.calls.append([p for _, p in items])
            if len(self.calls) == 1:
                self.entered.set()
                assert self.go.wait(20)
            return write()

        return held


class _Redelivering:
    """A subscription that, right after position ``after``, delivers the three notifications up
    to it again (what a resubscription or a reconnect can do), then carries on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.after: int | None = None
        self.waiting_past: int | None = None
        self.waiting = threading.Event()
        self.redelivered: list[int] = []
        self._seen: list[Notification] = []
        self._again: list[Notification] = []

    def __enter__(self) -> _Redelivering:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)

    def stop(self) -> None:
        self.inner.stop()

    def __iter__(self) -> Iterator[Notification]:
        return self

    def __next__(self) -> Notification:
        if self._again:
            self.redelivered.append(self._again[0].id)
            return self._again.pop(0)
        last = self._seen[-1].id if self._seen else 0
        if self.waiting_past is not None and last >= self.waiting_past:
            self.waiting.set()  # the runner's feeder queued everything up to it and asks for more
        n: Notification = next(self.inner)
        self._seen.append(n)
        if n.id == self.after:
            self._again = self._seen[-3:]
        return n


def test_events_arriving_during_a_commit_go_in_the_next_one_exactly_once(
    graph: DecisionGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = scenarios.popo_app()
    subscriptions: list[_Redelivering] = []
    subscribe = app.recorder.subscribe

    def redelivering(gt: int | None = None, topics: Sequence[str] = ()) -> Any:
        subscriptions.append(_Redelivering(subscribe(gt=gt, topics=topics)))
        return subscriptions[-1]

    monkeypatch.setattr(app.recorder, "subscribe", redelivering)
    scenarios.completed(app)
    projection = _Held(graph)
    batches: list[tuple[int, int, int]] = []
    runner = ProjectorRunner(
        app, projection, on_batch=lambda *batch: batches.append(batch), idle_s=60
    )
    try:
        runner.start()
        assert projection.entered.wait(10)  # the first commit is under way, and held
        feed = subscriptions[-1]
        feed.after = (app.recorder.max_notification_id() or 0) + 6
        scenarios.completed(app)
        scenarios.timed_out(app)
        head = app.recorder.max_notification_id() or 0
        feed.waiting_past = head
        assert feed.waiting.wait(10)
        projection.go.set()
        runner.wait(head)

        first, second = projection.calls  # everything that arrived went in one more commit
        assert first[-1] < second[0] <= feed.after - 5 and second[-1] == head
        assert second[0] < min(feed.redelivered) < feed.after < head  # redelivered mid-batch...
        held = [n.id for n in feed._seen if n.id > first[-1]]
        assert sorted(set(second)) == second == held  # ...and dropped there, order kept
        assert [b[:2] for b in batches] == [(first[0], first[-1]), (second[0], head)]
        assert runner.applied == _ours(app) and runner.error is None  # each once
        report = verify(app, graph=graph)
        assert report.ok, report.differences
    finally:
        projection.go.set()
        runner.close()


def test_each_statement_text_runs_with_row_counts_of_one_size_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LadybugDB keeps a prepared statement's first values: a text first run with a catch-up
    # batch's rows made every later live run of it pay for those rows (tens of ms per commit).
    # LadybugDB's alone: Neo4j plans a statement for its text, not for the values of its first
    # run, and the adapter sends each text as it is.
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
