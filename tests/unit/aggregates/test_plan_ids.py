"""A plan id becomes part of its deliberations' task ids (``plan:<id>:<ROLE>``), so the Plan
aggregate accepts only ids that make readable task ids (1-128 of letters, digits, . _ : @ / -,
the longest role included); anything else is refused naming plan_id, whatever the way in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aggregates import InvalidDeliberationError, Plan
from aggregates.plan import MAX_PLAN_ID

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("plan_id", ["PL-1", "team/sprint.7:plan@v2_b", "x" * MAX_PLAN_ID])
def test_plan_ids_that_make_readable_task_ids_are_approved(plan_id: str) -> None:
    plan = Plan.approve(plan_id=plan_id, story_id="US-1", approved_at=T0, roles=["ARCHITECT"])
    assert plan.task_ids() == [f"plan:{plan_id}:ARCHITECT"]
    assert len(plan.task_ids()[0]) <= 128


@pytest.mark.parametrize("plan_id", ["sprint 7", "plan\n1", "plän", "a*b", "x" * (MAX_PLAN_ID + 1)])
def test_a_plan_id_no_task_id_could_carry_is_refused_naming_plan_id(plan_id: str) -> None:
    with pytest.raises(InvalidDeliberationError, match=r"^plan_id: .* is not a plan id") as e:
        Plan.approve(plan_id=plan_id, story_id="US-1", approved_at=T0)
    assert e.value.field == "plan_id"
    assert f"at most {MAX_PLAN_ID} characters" in str(e.value)
