"""The Council aggregate: members over time, guards that name the field, and re-creation."""

from __future__ import annotations

from uuid import UUID

import pytest
from eventsourcing.application import Application

from aggregates import (
    Council,
    CouncilSettings,
    CouncilStateError,
    InvalidDeliberationError,
    council_id,
)
from aggregates.council import default_agent_ids


def dev_council(n: int = 3) -> Council:
    c = Council.create("dev", CouncilSettings(model="m-1", endpoint="http://llm:8000"))
    for aid in default_agent_ids("DEV", n):
        c.register(aid)
    return c


def test_id_derives_from_role_in_any_case() -> None:
    assert Council.create("dev").id == council_id("DEV") == council_id(" Dev ")
    assert council_id("DEV") != council_id("QA")


def test_members_keep_registration_order_and_overrides() -> None:
    c = dev_council()
    c.register(
        "agent-x", model="big", endpoint="http://other", model_profile="p", metadata={"a": "1"}
    )
    assert c.agent_ids == ["agent-dev-001", "agent-dev-002", "agent-dev-003", "agent-x"]
    x = c.members["agent-x"]
    assert (x.model, x.endpoint, x.model_profile, dict(x.metadata)) == (
        "big",
        "http://other",
        "p",
        {"a": "1"},
    )
    assert x.registered_at is not None


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.register("agent-dev-001"), "agent_id"),
        (lambda c: c.register("bad id!"), "agent_id"),
        (lambda c: c.register(""), "agent_id"),
        (lambda c: c.unregister("nobody"), "agent_id"),
        (lambda c: c.reconfigure("nobody", model="m"), "agent_id"),
        (lambda c: c.register("a", metadata={str(i): "" for i in range(40)}), "metadata"),
    ],
)
def test_bad_commands_name_the_field_and_record_nothing(call: object, field: str) -> None:
    c = dev_council()
    c.collect_events()
    with pytest.raises(InvalidDeliberationError) as e:
        call(c)  # type: ignore[operator]
    assert e.value.field == field
    assert c.collect_events() == []


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        (CouncilSettings(deliberation_rounds=9), "config.deliberation_rounds"),
        (CouncilSettings(agent_type="GPU"), "config.agent_type"),
    ],
)
def test_bad_settings_name_the_field(settings: CouncilSettings, field: str) -> None:
    with pytest.raises(InvalidDeliberationError) as e:
        Council.create("QA", settings)
    assert e.value.field == field


def test_unknown_role_names_role() -> None:
    with pytest.raises(InvalidDeliberationError) as e:
        Council.create("CHEF")
    assert e.value.field == "role"


def test_reconfigure_records_only_a_change() -> None:
    c = dev_council()
    c.collect_events()
    assert not c.reconfigure("agent-dev-001")
    assert c.reconfigure("agent-dev-001", model="m-2")
    (ev,) = c.collect_events()
    assert isinstance(ev, Council.AgentReconfigured)
    assert c.members["agent-dev-001"].model == "m-2"
    assert c.agent_ids[0] == "agent-dev-001"  # its place on the council is kept


def test_deleted_council_refuses_changes_and_can_be_created_again() -> None:
    c = dev_council()
    assert c.delete() == ["agent-dev-001", "agent-dev-002", "agent-dev-003"]
    with pytest.raises(CouncilStateError) as e:
        c.register("agent-dev-004")
    assert e.value.field == "role"
    c.recreate(CouncilSettings(model="m-3", deliberation_rounds=2))
    c.register("agent-dev-009")
    assert (c.deleted, c.agent_ids, c.settings.model) == (False, ["agent-dev-009"], "m-3")
    with pytest.raises(CouncilStateError):
        c.recreate()


def test_history_replays_to_the_same_council() -> None:
    app: Application[UUID] = Application()
    c = dev_council()
    c.unregister("agent-dev-002")
    c.reconfigure("agent-dev-003", endpoint="http://e3")
    c.delete()
    c.recreate()
    c.register("agent-dev-005", model="q")
    app.save(c)
    back: Council = app.repository.get(c.id)
    assert isinstance(back, Council)
    assert back.agent_ids == ["agent-dev-005"]
    assert back.members["agent-dev-005"].model == "q"
    assert app.repository.get(c.id, version=5).agent_ids == ["agent-dev-001", "agent-dev-003"]
