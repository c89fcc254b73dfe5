"""The cache's fold equals ``view_from_aggregate`` after every event, and survives its codec."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID, uuid4

import pytest

from aggregates import Deliberation, DeliberationStatus
from application.app import FleetApplication
from projectors.cache import (
    DeliberationView,
    InMemoryDeliberationBoard,
    evolve,
    view_from_aggregate,
)
from projectors.cache.codec import decode_view, encode_view
from tests.unit.projectors import scenarios
from tests.unit.projectors.scenarios import Run

SCENARIOS: list[Callable[[FleetApplication], Run]] = [
    scenarios.completed,
    scenarios.timed_out,
    scenarios.all_failed,
]


def _events(app: FleetApplication, run: Run) -> list[object]:
    return list(app.repository.event_store.get(run.deliberation_id))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_fold_equals_replay_after_every_event(scenario: Callable[[FleetApplication], Run]) -> None:
    app = scenarios.popo_app()
    run = scenario(app)
    view: DeliberationView | None = None
    for event in _events(app, run):
        view = evolve(view, event)
        version = event.originator_version  # type: ignore[attr-defined]
        replayed: Deliberation = app.repository.get(run.deliberation_id, version=version)
        assert view == view_from_aggregate(replayed)
    assert view is not None and view.is_terminal


def test_codec_round_trip_keeps_every_field() -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    view = view_from_aggregate(app.repository.get(run.deliberation_id))
    decoded = decode_view(encode_view(view, position=run.position))
    assert decoded == view
    assert decoded is not None and decoded.position == run.position
    assert decoded.duration_ms is not None and decoded.duration_ms >= 0


def test_views_of_the_three_endings() -> None:
    app = scenarios.popo_app()
    done = view_from_aggregate(app.repository.get(scenarios.completed(app).deliberation_id))
    assert done.status is DeliberationStatus.COMPLETED
    assert done.winner == done.ranking[0] and len(done.results) == 3
    assert [r.rank for r in sorted(done.results, key=lambda r: r.rank or 0)] == [1, 2, 3]
    assert done.late == (done.agents[0],)
    timeout = view_from_aggregate(app.repository.get(scenarios.timed_out(app).deliberation_id))
    assert timeout.status is DeliberationStatus.TIMEOUT
    assert timeout.missing == ("dev-agent-2",) and len(timeout.results) == 2
    failed = view_from_aggregate(app.repository.get(scenarios.all_failed(app).deliberation_id))
    assert failed.status is DeliberationStatus.FAILED
    assert len(failed.failures) == 3 and "every agent failed" in failed.reason


def test_an_event_without_its_predecessor_drops_the_entry() -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    first, second, third, *_ = _events(app, run)
    view = evolve(evolve(None, first), second)
    assert evolve(view, second) is None  # not the next version: drop rather than guess
    assert evolve(None, third) is None  # no entry (expired or lost): stays missing


def test_in_memory_board_rejects_a_passed_position() -> None:
    board = InMemoryDeliberationBoard()
    app = scenarios.popo_app()
    run = scenarios.all_failed(app)
    view = view_from_aggregate(app.repository.get(run.deliberation_id))
    assert board.put(run.deliberation_id, view, position=5)
    assert not board.put(run.deliberation_id, None, position=5)
    assert board.get(run.deliberation_id) == view and board.position() == 5
    assert board.get(uuid4()) is None


def test_non_deliberation_events_are_not_folded() -> None:
    assert evolve(None, object()) is None
    assert Deliberation.Requested.__name__ == "Requested"


def test_a_batch_reads_only_the_entries_it_does_not_start() -> None:
    # A deliberation requested inside the batch starts from its Requested event, so reading its
    # entry first would be a wasted round trip (most of a catch-up's reads).
    from projectors.cache import CacheProjection

    class CountingBoard(InMemoryDeliberationBoard):
        def __init__(self) -> None:
            super().__init__()
            self.read: list[object] = []

        def get_many(self, ids: Iterable[UUID]) -> dict[UUID, DeliberationView | None]:
            wanted = list(ids)
            self.read += wanted
            return super().get_many(wanted)

    app = scenarios.popo_app()
    first = scenarios.completed(app, late=False)
    second = scenarios.completed(app, late=False)
    events = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 100)
    ]
    board = CountingBoard()
    projection = CacheProjection(board)
    split = next(i for i, (e, _) in enumerate(events) if e.originator_id == second.deliberation_id)
    projection.apply_batch(events[: split + 2], base=0)
    assert board.read == []
    projection.apply_batch(events[split + 2 :], base=events[split + 1][1])
    assert board.read == [second.deliberation_id]
    for run in (first, second):
        replayed = view_from_aggregate(app.repository.get(run.deliberation_id))
        assert board.get(run.deliberation_id) == replayed
