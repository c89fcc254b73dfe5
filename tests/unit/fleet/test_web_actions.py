"""The console's actions: the submit form's JSON as the command's input, and each refusal of a
command as the HTTP status the console has always answered, with the command's message."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from google.protobuf.message import Message

from aggregates import CouncilStateError, DeliberationClosedError, InvalidDeliberationError
from application.admission import InFlightBoundError
from application.deliberations import NewDeliberation
from application.errors import (
    DeliberationNotFoundError,
    QueryRefusedError,
    ServiceUnavailableError,
)
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.web._actions import act
from fleet.web._requests import new_deliberation


def test_the_submit_form_becomes_the_commands_input() -> None:
    body = {
        "task": "Write fib(n)", "role": "DEV", "task_id": "web-1", "num_agents": "2",
        "rounds": 3, "timeout_seconds": 90, "requirements": ["fast", 7],
        "acceptance_tests": "def test_x():\n    pass\n",
    }  # fmt: skip
    assert new_deliberation(body) == NewDeliberation(
        task_description="Write fib(n)", role="DEV", task_id="web-1", num_agents=2, rounds=3,
        timeout_seconds=90, requirements=("fast", "7"),
        metadata={"acceptance_tests": "def test_x():\n    pass\n"}, requested_by="web",
    )  # fmt: skip
    assert new_deliberation({}).metadata == {}


def test_a_field_that_is_not_a_whole_number_is_a_400_naming_it() -> None:
    with pytest.raises(web.HTTPBadRequest) as e:
        new_deliberation({"task": "t", "rounds": "three"})
    assert json.loads(str(e.value.text)) == {"error": "rounds: 'three' is not an integer"}


@pytest.mark.parametrize(
    ("refusal", "status"),
    [
        (InvalidDeliberationError("num_agents", "99 not in 1..16"), 400),
        (QueryRefusedError("cypher: the query is empty"), 400),
        (CouncilStateError("role", "the QA role has no council"), 409),
        (DeliberationClosedError("t-1 already ended"), 409),
        (ServiceUnavailableError("no graph"), 503),
        (TimeoutError("too slow"), 504),
        (InFlightBoundError("3 deliberations are open"), 429),
    ],
)
async def test_a_refusal_answers_its_status_with_the_commands_message(
    refusal: Exception, status: int
) -> None:
    async def work() -> Message:
        raise refusal

    response = await act("Deliberate", "t-1", work)
    assert response.status == status
    assert json.loads(str(response.text)) == {"error": str(refusal)}


async def test_not_found_is_left_to_the_consoles_404_and_a_bug_says_where_to_look() -> None:
    async def missing() -> Message:
        raise DeliberationNotFoundError("no deliberation t-1")

    with pytest.raises(DeliberationNotFoundError):
        await act("CancelDeliberation", "t-1", missing)

    async def bug() -> Message:
        raise KeyError("oops")

    response = await act("CancelDeliberation", "t-1", bug)
    assert response.status == 500
    assert json.loads(str(response.text)) == {
        "error": "CancelDeliberation: internal error (see server log)"
    }


async def test_an_answer_is_the_api_message_as_json() -> None:
    async def done() -> Message:
        return pb.CancelDeliberationResponse(task_id="t-1")

    response = await act("CancelDeliberation", "t-1", done)
    assert json.loads(str(response.text)) == {
        "task_id": "t-1",
        "status": "DELIBERATION_STATUS_UNKNOWN",
    }
