"""Councils on JetStream: what one node writes another node reads, a restart changes nothing, a
configuration change is applied as events, and a failed request records nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from aggregates import Council, CouncilSettings, CouncilStateError, InvalidDeliberationError
from aggregates import council_id as cid
from application.app import FleetApplication
from application.council_store import CouncilEventStore, seed_councils
from application.feed import ApplicationEventFeed
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def apps(
    nats_env: dict[str, str],
) -> AsyncIterator[tuple[FleetApplication, FleetApplication]]:
    """Two applications on one stream: two nodes."""
    a = await asyncio.to_thread(FleetApplication, nats_env)
    b = await asyncio.to_thread(FleetApplication, nats_env)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _events(app: FleetApplication, role: str) -> list[str]:
    return [type(e).__name__ for e in app.events.get(cid(role))]


async def test_bootstrap_is_the_seeds_and_a_restart_records_nothing(
    apps: tuple[FleetApplication, FleetApplication],
) -> None:
    a, b = apps
    first, second = CouncilEventStore(a), CouncilEventStore(b)
    # Two nodes starting at once: the configuration is applied once.
    await asyncio.gather(
        first.apply_configuration(seed_councils(default_model="m")),
        second.apply_configuration(seed_councils(default_model="m")),
    )
    views = await second.list_councils()
    assert [v.role for v in views] == ["ARCHITECT", "DATA", "DEV", "DEVOPS", "QA"]
    dev = next(v for v in views if v.role == "DEV")
    assert [x.agent_id for x in dev.agents] == ["agent-dev-001", "agent-dev-002", "agent-dev-003"]
    assert {x.model for x in dev.agents} == {"m"}
    before = _events(a, "DEV")
    assert before.count("AgentRegistered") == 3

    assert await first.apply_configuration(seed_councils(default_model="m")) == []  # restart
    assert _events(a, "DEV") == before


async def test_a_configuration_change_is_applied_as_events_and_keeps_api_agents(
    apps: tuple[FleetApplication, FleetApplication],
) -> None:
    a, _ = apps
    store = CouncilEventStore(a)
    await store.apply_configuration(seed_councils())
    await store.register("DEV", "agent-extra")
    changed = await store.apply_configuration(seed_councils({"DEV": ["big", ""]}))
    assert changed == ["DEV"]
    dev = await store.council("DEV")
    assert dev is not None
    assert [(x.agent_id, x.model) for x in dev.agents] == [
        ("agent-dev-001", "big"),
        ("agent-dev-002", ""),
        ("agent-extra", ""),
    ]
    history = _events(a, "DEV")
    assert history[-3:] == ["AgentUnregistered", "AgentReconfigured", "Configured"]
    assert history.count("AgentRegistered") == 4  # the first three and agent-extra, never edited


async def test_writes_are_read_by_another_node_at_once_and_live(
    apps: tuple[FleetApplication, FleetApplication],
) -> None:
    a, b = apps
    writer = CouncilEventStore(a, ApplicationEventFeed(a))
    async with writer, CouncilEventStore(b, ApplicationEventFeed(b)) as reader:
        created = await writer.create("QA", 2, CouncilSettings(model="q", deliberation_rounds=2))
        assert (await writer.council("QA")) == created  # never stale after its own write
        await eventually(lambda: _has(reader, "QA", 2), what="the other node sees the change")
        await writer.register("QA", "agent-new", endpoint="http://e:1")
        await eventually(lambda: _has(reader, "QA", 3), what="the other node sees the change")
        view = await reader.council("QA")
        assert view is not None and view.deliberation_rounds == 2
        assert view.agents[-1].endpoint == "http://e:1" and view.agents[-1].model == "q"
        assert await writer.delete("QA") == ["agent-qa-001", "agent-qa-002", "agent-new"]
        await eventually(lambda: _gone(reader, "QA"), what="the other node sees the change")
        again = await writer.create("QA", 1)  # a deleted council is created again, in place
        assert [x.agent_id for x in again.agents] == ["agent-qa-001"]
        assert _events(a, "QA")[-3:] == ["Deleted", "Recreated", "AgentRegistered"]


async def _has(store: CouncilEventStore, role: str, n: int) -> bool:
    v = await store.council(role)
    return v is not None and len(v.agents) == n


async def _gone(store: CouncilEventStore, role: str) -> bool:
    return await store.council(role) is None


async def test_bad_requests_name_the_field_and_record_nothing(
    apps: tuple[FleetApplication, FleetApplication],
) -> None:
    a, _ = apps
    store = CouncilEventStore(a)
    await store.create("DEV", 1)
    await store.create("QA", 1)
    before = (_events(a, "DEV"), _events(a, "QA"))

    async def waiting(role: str) -> int:
        return 2

    cases = [
        (store.create("CHEF", 1), InvalidDeliberationError, "role"),
        (store.create("DATA", 17), InvalidDeliberationError, "num_agents"),
        (store.create("DATA", 0), InvalidDeliberationError, "num_agents"),
        (store.create("DEV", 2), CouncilStateError, "role"),
        (store.register("DEV", "agent-dev-001"), InvalidDeliberationError, "agent_id"),
        (store.register("DEV", "agent-qa-001"), InvalidDeliberationError, "agent_id"),
        (store.register("DEVOPS", "x"), CouncilStateError, "role"),
        (store.unregister("DEV", "nobody"), InvalidDeliberationError, "agent_id"),
        (store.unregister("DEV", "agent-dev-001", waiting=waiting), CouncilStateError, "agent_id"),
        (store.delete("ARCHITECT"), CouncilStateError, "role"),
    ]
    for call, error, field in cases:
        with pytest.raises(error) as e:
            await call
        assert getattr(e.value, "field", None) == field, e.value
    assert (_events(a, "DEV"), _events(a, "QA")) == before
    assert isinstance(a.repository.get(cid("DEV")), Council)
