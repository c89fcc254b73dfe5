"""The start/stop contract every background service relies on."""

from __future__ import annotations

import asyncio

import pytest

from lifecycle import BackgroundService


class Ticker(BackgroundService):
    def __init__(self, fail_after: int | None = None) -> None:
        self.ticks = 0
        self.ticked = asyncio.Event()
        self.prepared = False
        self.fail_after = fail_after

    async def prepare(self) -> None:
        self.prepared = True

    async def run(self) -> None:
        while True:
            self.ticks += 1
            self.ticked.set()
            if self.fail_after is not None and self.ticks >= self.fail_after:
                raise RuntimeError("broke")
            await asyncio.sleep(0)


async def test_entering_prepares_then_runs_and_leaving_stops_the_runner() -> None:
    async with Ticker() as t:
        assert t.prepared
        (runner,) = t.background_tasks()
        assert runner.get_name() == "Ticker"
        await asyncio.wait_for(t.ticked.wait(), 5)
    assert runner.cancelled() and t.background_tasks() == []
    await t.close()  # idempotent


async def test_close_is_idempotent_and_safe_before_start() -> None:
    t = Ticker()
    await t.close()  # never started: nothing to stop
    t.start()
    await asyncio.wait_for(t.ticked.wait(), 5)
    (runner,) = t.background_tasks()
    await t.close()
    ticks = t.ticks
    await t.close()  # a second call does nothing
    assert runner.cancelled() and t.background_tasks() == [] and t.ticks == ticks


async def test_a_runner_that_fails_is_visible_and_stopping_still_completes() -> None:
    t = Ticker(fail_after=2)
    async with t:
        (runner,) = t.background_tasks()
        with pytest.raises(RuntimeError, match="broke"):
            await runner
    assert t.background_tasks() == []


async def test_a_failed_prepare_starts_nothing() -> None:
    class Broken(Ticker):
        async def prepare(self) -> None:
            raise OSError("no server")

    b = Broken()
    with pytest.raises(OSError, match="no server"):
        async with b:
            pass
    assert b.background_tasks() == [] and b.ticks == 0
