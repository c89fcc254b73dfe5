"""``pull_batches``: the one loop every pull-consumer reader uses must outlive each outcome of
nats-py's ``fetch`` except a closed connection (a scripted subscription: this is the loop's own
logic; the real-server case is in tests/integration/nats_backend)."""

from __future__ import annotations

from typing import Any

import pytest
from nats.errors import ConnectionClosedError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from agent_runtime.nats_pull import pull_batches


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
