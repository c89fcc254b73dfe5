"""``FLEET_PLANNING_START``: where a planning consumer created for the first time begins."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dispatchers.planning_start import PlanningStart
from fleet.config import ConfigError, Settings


def test_the_default_is_the_streams_tail_so_a_cut_over_replays_nothing() -> None:
    assert PlanningStart.parse(None) == PlanningStart(policy="new")
    assert Settings.from_env({}).planning_start.policy == "new"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("new", PlanningStart(policy="new")),
        ("ALL", PlanningStart(policy="all")),
        ("42", PlanningStart(policy="sequence", sequence=42)),
        (
            "2026-11-01T08:30:00Z",
            PlanningStart(policy="time", time=datetime(2026, 11, 1, 8, 30, tzinfo=UTC)),
        ),
        (
            "2026-11-01T10:30:00+02:00",
            PlanningStart(policy="time", time=datetime(2026, 11, 1, 8, 30, tzinfo=UTC)),
        ),
    ],
)
def test_each_form_the_setting_takes(text: str, expected: PlanningStart) -> None:
    assert PlanningStart.parse(text) == expected
    assert Settings.from_env({"FLEET_PLANNING_START": text}).planning_start == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("yesterday", "is not one of: new, all"),
        ("0", "starts at 1"),
        ("2026-11-01T08:30:00", "needs its offset"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match="FLEET_PLANNING_START") as e:
        Settings.from_env({"FLEET_PLANNING_START": text})
    assert says in str(e.value) and "\n" not in str(e.value)
