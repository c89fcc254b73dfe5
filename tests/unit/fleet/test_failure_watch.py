"""A part of a Fleet node that stops on its own stops the node, with the reason.

The dispatcher here is real (on the in-memory application); only its event feed is made to fail,
as a feed whose server is gone for good would.
"""

from __future__ import annotations

import asyncio
from typing import Any

from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher
from fleet.bootstrap import FleetNode
from fleet.cli.commands.up import _until_stopped_or_failed
from fleet.config import Settings
from tests.support.doubles import BrokenFeed, NoAgents


def app() -> FleetApplication:
    return FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


async def test_a_dispatcher_whose_feed_fails_is_the_nodes_failure() -> None:
    node = FleetNode(Settings())
    store = ApplicationDeliberationStore(app())
    async with DeliberationDispatcher(store, BrokenFeed(), NoAgents()) as dispatcher:
        node.watch("dispatcher", dispatcher)
        reason = await asyncio.wait_for(node.wait_failed(poll_s=0.01), 5.0)
    assert reason.startswith("dispatcher stopped")
    assert "connection closed" in reason


async def test_a_healthy_or_cleanly_stopped_dispatcher_is_no_failure() -> None:
    node = FleetNode(Settings())
    a = app()
    store = ApplicationDeliberationStore(a)
    dispatcher = DeliberationDispatcher(store, ApplicationEventFeed(a), NoAgents())
    async with dispatcher:
        node.watch("dispatcher", dispatcher)
        await asyncio.sleep(0.1)
        assert node.failure() is None
    assert node.failure() is None  # cancelled by its own shutdown: not a failure


class Failing:
    async def wait_failed(self, poll_s: float = 1.0) -> str:
        await asyncio.sleep(0.01)
        return "dispatcher stopped: boom"


class Healthy:
    async def wait_failed(self, poll_s: float = 1.0) -> str:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_fleet_up_ends_on_a_failure_with_its_reason_and_on_a_signal_with_none() -> None:
    assert await _until_stopped_or_failed(asyncio.Event(), Failing()) == (
        "dispatcher stopped: boom"
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, stop.set)
    node: Any = Healthy()
    assert await _until_stopped_or_failed(stop, node) is None
