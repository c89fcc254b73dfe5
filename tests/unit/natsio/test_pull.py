"""``pull_batches``: the one loop every pull-consumer reader uses must outlive each outcome of
nats-py's ``fetch`` except a closed connection (a scripted subscription: this is the loop's own
logic; the real-server case is in tests/integration/natsio)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.errors import ConnectionClosedError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from natsio import pull_batches


class ScriptedSubscription:
    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.fetches = 0

    async def fetch(self, batch: int = 1, timeout: float | None = 5, heartbeat: Any = None) -> Any:
        self.fetches += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


async def test_empty_batches_timeouts_and_nats_errors_never_end_the_loop() -> None:
    sub = ScriptedSubscription(
        [],  # the server's 408 beat the client's timer
        NatsTimeoutError(),
        TimeoutError(),
        NoRespondersError(),  # reconnecting / leader moving
        ["a", "b"],
        [],
        ["c"],
        ConnectionClosedError(),
    )
    got = []
    with pytest.raises(ConnectionClosedError):
        async for msgs in pull_batches(sub, batch=8, what="test", max_backoff_s=0.01):
            got.append(msgs)
    assert got == [["a", "b"], ["c"]]
    assert sub.fetches == 8


class CancelledAsTheAnswerLands:
    """``fetch`` as nats-py's behaves on Python 3.11 when a cancellation arrives in the loop step
    that brings its answer (or its timeout): ``asyncio.wait_for`` hands back the outcome and the
    CancelledError is lost, while the task stays marked as cancelling. Later fetches answer
    every 10 ms, as a busy consumer does."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.fetches = 0

    async def fetch(self, batch: int = 1, timeout: float | None = 5, heartbeat: Any = None) -> Any:
        self.fetches += 1
        if self.fetches > 1:
            await asyncio.sleep(0.01)
            return ["later"]
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            if isinstance(self.outcome, BaseException):
                raise self.outcome from None
            return self.outcome
        raise AssertionError("the cancellation never arrived")


@pytest.mark.parametrize("outcome", [["answer"], NatsTimeoutError()], ids=["batch", "timeout"])
async def test_a_cancellation_lost_inside_fetch_still_ends_the_loop(outcome: Any) -> None:
    sub = CancelledAsTheAnswerLands(outcome)
    got: list[list[Any]] = []

    async def consume() -> None:
        async for msgs in pull_batches(sub, batch=1, what="test"):
            got.append(msgs)

    task = asyncio.create_task(consume())
    done, _ = await asyncio.wait([task], timeout=1.0)
    assert task in done, f"still polling after its cancellation ({sub.fetches} fetches)"
    assert task.cancelled()
    assert (sub.fetches, got) == (1, [])
