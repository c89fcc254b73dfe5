"""A plan's use cases: message parsing, idempotent approval, one deliberation per role."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from aggregates import InvalidDeliberationError, Plan, deliberation_id
from application.app import FleetApplication
from application.errors import DeliberationNotFoundError
from application.plans import (
    BadPlanMessage,
    PlanApproval,
    PlanOptions,
    approve_and_request,
    approve_plan,
    parse_plan_approval,
    request_deliberations,
)
from application.stores import ApplicationDeliberationStore

NOW = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
SEED_MESSAGE = {
    "story_id": "US-42",
    "plan_id": "PL-7",
    "approved_by": "po@example.com",
    "timestamp": "2026-01-02T03:04:05Z",
    "roles": ["DEV", "QA"],
    "ceremony_id": "c-1",
    "tasks_created": [{"title": "API", "description": "POST /login"}, "Login form"],
    "description": "Users log in with e-mail and password",
}


def test_a_seed_message_parses_with_its_content_and_extras() -> None:
    a = parse_plan_approval(json.dumps(SEED_MESSAGE).encode())
    assert (a.plan_id, a.story_id, a.approved_by, a.roles) == (
        "PL-7", "US-42", "po@example.com", ("DEV", "QA"),
    )  # fmt: skip
    assert a.tasks == ("API: POST /login", "Login form")
    assert a.description.startswith("Users log in")
    assert a.metadata["ceremony_id"] == "c-1"
    assert a.approved_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json{", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"story_id": "s"}', "missing plan_id"),
        (b'{"plan_id": "p"}', "missing story_id"),
        (b'{"plan_id": "p", "story_id": "s", "roles": "DEV"}', "roles"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_bad_bodies_are_rejected_with_a_reason(body: bytes, reason: str) -> None:
    with pytest.raises(BadPlanMessage, match=reason):
        parse_plan_approval(body)


def _topics(app: FleetApplication) -> list[str]:
    return [n.topic.rsplit(".", 1)[-1] for n in app.recorder.select_notifications(1, 1000)]


async def test_a_plan_that_names_no_roles_dispatches_nothing_and_says_so() -> None:
    """The seed skipped such a plan with a warning; inventing ARCHITECT, DEV and QA work is not
    Fleet's to do. The plan records why it got nothing (and the plan dispatcher, on a restart,
    does not try again: ``tests/unit/dispatchers/test_plan_dispatcher.py``)."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    body = {k: v for k, v in SEED_MESSAGE.items() if k != "roles"}
    plan, _ = await approve_plan(store, parse_plan_approval(json.dumps(body).encode()), now=NOW)
    assert plan.roles == []
    assert await request_deliberations(store, plan.id, PlanOptions(), NOW) is True
    stored = await store.get_plan(plan.id)
    assert stored.dispatched and stored.requested_task_ids == []
    assert stored.nothing_dispatched == "the approval named no roles"
    assert "Requested" not in _topics(app)
    assert _topics(app)[-1] == "NothingDispatched"


async def test_a_role_without_a_council_is_skipped_on_record_and_councils_shape_the_rest() -> None:
    from application.councils import CouncilAgentView, CouncilView

    class Directory:
        dev = CouncilView(
            "c-dev", "DEV", agents=[CouncilAgentView("a1", "DEV")],
            deliberation_rounds=2, enable_peer_review=False,
        )  # fmt: skip
        qa = CouncilView("c-qa", "QA")  # exists, no members

        async def council(self, role: str) -> CouncilView | None:
            return {"DEV": self.dev, "QA": self.qa}.get(role)

    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    roles = ["DEV", "QA", "DATA"]
    plan, _ = await store.create_plan(
        Plan.approve(plan_id="P3", story_id="S", approved_at=NOW, roles=roles)
    )
    directory: Any = Directory()
    await request_deliberations(store, plan.id, PlanOptions(), NOW, directory)
    stored = await store.get_plan(plan.id)
    assert stored.requested_task_ids == ["plan:P3:DEV"]
    assert stored.skipped_roles == {
        "QA": "the QA role has an empty council: no deliberation requested",
        "DATA": "the DATA role has no council: no deliberation requested",
    }
    dev = await store.get(deliberation_id("plan:P3:DEV"))
    assert (dev.rounds, dev.peer_review) == (2, False)  # the council's, none named
    with pytest.raises(DeliberationNotFoundError):
        await store.get(deliberation_id("plan:P3:DATA"))
    # every role skipped: nothing dispatched, and why
    plan4, _ = await store.create_plan(
        Plan.approve(plan_id="P4", story_id="S", approved_at=NOW, roles=["DATA"])
    )
    await request_deliberations(store, plan4.id, PlanOptions(rounds=1), NOW, directory)
    p4 = await store.get_plan(plan4.id)
    assert p4.nothing_dispatched == "no role of the plan (DATA) has a council"


async def test_approve_and_request_answers_with_the_task_ids_and_twice_records_once() -> None:
    """ApprovePlan's use case (the RPC's and the web console's): the deliberations are
    requested before the answer, so the task ids it names exist; a repeated approval creates
    nothing new; a bad field is refused, named, with nothing recorded."""
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    approval = PlanApproval(plan_id="PL-9", story_id="US-9", roles=("DEV", "QA"))
    plan, created = await approve_and_request(store, approval, PlanOptions(), NOW, None)
    assert created and plan.requested_task_ids == ["plan:PL-9:DEV", "plan:PL-9:QA"]
    for task in plan.requested_task_ids:
        assert (await store.get(deliberation_id(task))).plan_id == "PL-9"
    again, created = await approve_and_request(store, approval, PlanOptions(), NOW, None)
    assert not created and again.requested_task_ids == plan.requested_task_ids
    before = len(_topics(app))
    with pytest.raises(InvalidDeliberationError, match="plan_id"):
        await approve_and_request(
            store, PlanApproval(plan_id="no spaces", story_id="S"), PlanOptions(), NOW, None
        )
    assert len(_topics(app)) == before
