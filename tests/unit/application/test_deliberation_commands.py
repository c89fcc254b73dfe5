"""The deliberation commands every edge calls (``application.deliberations``): given a store
and councils, when a client submits or cancels, then what is recorded, or the error naming the
field the client should look at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from aggregates import (
    CouncilStateError,
    DeliberationClosedError,
    DeliberationStatus,
    InvalidDeliberationError,
)
from aggregates.task_code import ACCEPTANCE_TESTS_KEY, REFERENCE_KEY
from application.app import FleetApplication
from application.councils import CouncilView
from application.deliberations import DeliberationCommands, NewDeliberation
from application.errors import DeliberationNotFoundError
from application.stores import ApplicationDeliberationStore
from tests.support.doubles import Directory

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TESTS = "from solution import fib\n\ndef test_fib():\n    assert fib(10) == 55\n"


def commands(councils: Directory | None = None) -> DeliberationCommands:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    return DeliberationCommands(
        ApplicationDeliberationStore(app),
        default_timeout_s=60,
        clock=lambda: NOW,
        councils=councils,
        trace_context=lambda: "00-trace-span-01",
        new_task_id=lambda: "fresh-1",
    )


def new(**fields: object) -> NewDeliberation:
    given: dict[str, object] = {"task_description": "Write fib(n)", "role": "DEV"}
    given.update(fields)
    return NewDeliberation(**given)  # type: ignore[arg-type]


async def refused(c: DeliberationCommands, n: NewDeliberation) -> InvalidDeliberationError:
    with pytest.raises(InvalidDeliberationError) as e:
        await c.submit(n)
    return e.value


async def test_a_request_with_nothing_set_takes_the_seed_defaults() -> None:
    d, created = await commands().submit(new(requested_by="grpc"))
    assert created and d.task_id == "fresh-1" and d.status is DeliberationStatus.PENDING
    assert (d.num_agents, d.rounds, d.timeout_seconds, d.peer_review) == (3, 1, 60, True)
    assert (d.requested_by, d.trace_context) == ("grpc", "00-trace-span-01")
    assert d.deadline == NOW + timedelta(seconds=60)  # from the commands' clock


async def test_the_role_council_gives_rounds_and_peer_review_and_max_iterations_caps_them() -> None:
    councils = Directory()
    councils.dev = CouncilView(
        "council-dev", "DEV", councils.dev.agents, deliberation_rounds=4, enable_peer_review=False
    )
    c = commands(councils)
    d, _ = await c.submit(new(task_id="t-council"))
    assert (d.rounds, d.peer_review) == (4, False)
    capped, _ = await c.submit(new(task_id="t-capped", max_iterations=2))
    assert capped.rounds == 2


async def test_the_metadata_names_the_plan_and_story() -> None:
    d, _ = await commands().submit(new(metadata={"plan_id": "PL-1", "story_id": "US-2"}))
    assert (d.plan_id, d.story_id) == ("PL-1", "US-2")


async def test_a_repeated_task_id_is_answered_with_the_stored_deliberation() -> None:
    c = commands()
    first, created = await c.submit(new(task_id="t-same"))
    again, created_again = await c.submit(new(task_id="t-same", rounds=3))
    assert created and not created_again and again.id == first.id and again.rounds == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"timeout_seconds": -1}, "constraints.timeout_seconds"),
        ({"num_agents": -1}, "num_agents"),
        ({"num_agents": 17}, "num_agents"),
        ({"rounds": -1}, "rounds"),
        ({"max_iterations": -1}, "constraints.max_iterations"),
        ({"task_id": "not a task id"}, "task_id"),
        ({"task_description": " "}, "task_description"),
        ({"role": "WIZARD"}, "role"),
        ({"metadata": {ACCEPTANCE_TESTS_KEY: "def test_x(:\n"}}, "constraints.metadata."),
    ],
)
async def test_a_bad_field_is_refused_by_name_and_nothing_is_recorded(
    fields: dict[str, object], field: str
) -> None:
    c = commands()
    e = await refused(c, new(**{"task_id": "t-bad", **fields}))
    assert str(e).startswith(field), str(e)
    with pytest.raises(DeliberationNotFoundError):
        await c.cancel("t-bad")


async def test_acceptance_tests_must_compile_and_define_a_test() -> None:
    c = commands()
    e = await refused(c, new(metadata={ACCEPTANCE_TESTS_KEY: "def test_x(:\n    pass\n"}))
    assert str(e).startswith(f"constraints.metadata.{ACCEPTANCE_TESTS_KEY}: line 1"), str(e)
    e = await refused(c, new(metadata={ACCEPTANCE_TESTS_KEY: "x = 1\n"}))
    assert str(e).endswith(f"{ACCEPTANCE_TESTS_KEY}: defines no test function (def test_…)")
    d, _ = await c.submit(new(metadata={ACCEPTANCE_TESTS_KEY: TESTS}))
    assert d.metadata[ACCEPTANCE_TESTS_KEY] == TESTS


async def test_reference_code_that_does_not_compile_is_refused_naming_the_field() -> None:
    """A QA task's reference code that cannot compile is refused at the door: every QA
    answer's tests would otherwise fail to run against it, later and for no fault of theirs."""
    c = commands()
    e = await refused(
        c, new(role="QA", metadata={REFERENCE_KEY: "def median(xs:\n    return xs\n"})
    )
    assert str(e).startswith(f"constraints.metadata.{REFERENCE_KEY}"), str(e)
    assert "line 1" in str(e)
    good = "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n"
    d, _ = await c.submit(new(role="QA", metadata={REFERENCE_KEY: good}))
    assert d.metadata[REFERENCE_KEY] == good


async def test_a_role_without_agents_is_refused_naming_the_role() -> None:
    with pytest.raises(CouncilStateError) as e:
        await commands(Directory()).submit(new(role="QA"))
    assert str(e.value) == "role: the QA role has no council: no agents to deliberate"


async def test_cancel_ends_an_open_deliberation_once() -> None:
    c = commands()
    await c.submit(new(task_id="t-cancel"))
    d = await c.cancel("t-cancel", "  enough  ")
    assert d.status is DeliberationStatus.CANCELLED and d.reason == "enough"
    with pytest.raises(DeliberationClosedError):
        await c.cancel("t-cancel")


async def test_cancel_without_a_reason_says_a_client_did() -> None:
    c = commands()
    await c.submit(new(task_id="t-quiet"))
    assert (await c.cancel("t-quiet")).reason == "cancelled by a client"


async def test_cancel_refuses_a_bad_task_id_a_long_reason_and_an_unknown_task() -> None:
    c = commands()
    with pytest.raises(InvalidDeliberationError, match=r"^task_id: "):
        await c.cancel("")
    with pytest.raises(InvalidDeliberationError, match=r"^reason: longer than 1024 bytes"):
        await c.cancel("t-any", "x" * 1025)
    with pytest.raises(DeliberationNotFoundError):
        await c.cancel("t-never")


def test_the_task_code_keys_are_those_the_checks_read() -> None:
    from agent_runtime.checks.qa_run import REFERENCE_KEY as CHECKED_REFERENCE

    assert REFERENCE_KEY == CHECKED_REFERENCE
