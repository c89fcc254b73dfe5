"""A QA task's reference code that cannot compile is refused at the door, naming the field:
every QA answer's tests would otherwise fail to run against it, later and for no fault of theirs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aggregates import InvalidDeliberationError
from fleet.grpc._mapping import new_deliberation
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def request(reference: str) -> pb.DeliberateRequest:
    return pb.DeliberateRequest(
        task_description="Write tests for median(xs)",
        role="QA",
        constraints=pb.TaskConstraints(metadata={"reference_code": reference}),
    )


def deliberate(reference: str) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    new_deliberation(request(reference), now=now, default_timeout_s=60, new_task_id="t-1")


def test_reference_code_that_does_not_compile_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidDeliberationError) as e:
        deliberate("def median(xs:\n    return xs\n")
    assert str(e.value).startswith("constraints.metadata.reference_code"), str(e.value)
    assert "line 1" in str(e.value)


def test_reference_code_that_compiles_is_taken_as_given() -> None:
    deliberate("def median(xs):\n    return sorted(xs)[len(xs) // 2]\n")
