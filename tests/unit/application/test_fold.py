"""``fold``: the application's repository and snapshots fold events without the library's
per-event runtime-Protocol check, and reach exactly the state the library's own fold reaches."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from eventsourcing.application import project_aggregate
from eventsourcing.domain import CanMutateProtocol

from aggregates import Deliberation
from application.app import FleetApplication, FleetRepository, fold
from tests.unit.projectors import scenarios

SCENARIOS = ("completed", "timed_out", "all_failed", "in_progress", "debated")


def _state(aggregate: Any) -> dict[str, Any]:
    return dict(vars(aggregate))


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_loaded_deliberation_is_the_librarys_fold_of_its_events(name: str) -> None:
    app = scenarios.popo_app()
    d_id = getattr(scenarios, name)(app).deliberation_id
    events = list(app.events.get(d_id))
    loaded: Deliberation = app.repository.get(d_id)
    assert _state(loaded) == _state(project_aggregate(None, events))
    assert _state(fold(None, events)) == _state(loaded)
    for version in range(1, len(events) + 1):  # every earlier version too
        assert _state(app.repository.get(d_id, version=version)) == _state(
            project_aggregate(None, events[:version])
        )


def test_the_repository_and_the_snapshots_fold_with_fold() -> None:
    app = scenarios.popo_app()
    assert isinstance(app.repository, FleetRepository)
    assert inspect.signature(app.repository.get).parameters["projector_func"].default is fold
    assert FleetApplication.snapshotting_projectors[Deliberation] is fold


def test_a_deliberation_loaded_from_a_snapshot_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FleetApplication, "snapshotting_intervals", {Deliberation: 2})
    app = FleetApplication(env={**scenarios.POPO, "IS_SNAPSHOTTING_ENABLED": "y"})
    d_id = scenarios.completed(app).deliberation_id
    assert app.snapshots is not None and list(app.snapshots.get(d_id))
    events = list(app.events.get(d_id))
    assert _state(app.repository.get(d_id)) == _state(project_aggregate(None, events))


def test_fold_skips_the_librarys_per_event_protocol_check(monkeypatch: pytest.MonkeyPatch) -> None:
    # That check is what fold saves: measured on 16 events, 397 µs with it, 99 µs without. The
    # test counts the checks rather than timing them; a timed ratio failed on a busy machine.
    checks: list[object] = []
    meta = type(CanMutateProtocol)
    original = meta.__instancecheck__

    def counting(cls: Any, instance: object) -> bool:
        if cls is CanMutateProtocol:
            checks.append(instance)
        return original(cls, instance)

    monkeypatch.setattr(meta, "__instancecheck__", counting)
    app = scenarios.popo_app()
    events = list(app.events.get(scenarios.debated(app).deliberation_id))
    project_aggregate(None, events)
    assert len(checks) == len(events) > 1  # the count sees the library's check
    checks.clear()
    assert fold(None, events) is not None
    assert checks == []


def test_the_librarys_cache_setting_still_applies() -> None:
    app = FleetApplication(env={**scenarios.POPO, "AGGREGATE_CACHE_MAXSIZE": "10"})
    d_id = scenarios.in_progress(app).deliberation_id
    assert app.repository.cache is not None and app.repository.fastforward
    first: Deliberation = app.repository.get(d_id)
    first.cancel(reason="enough")
    app.save(first)
    again: Deliberation = app.repository.get(d_id)
    events = list(app.events.get(d_id))
    assert _state(again) == _state(project_aggregate(None, events))
