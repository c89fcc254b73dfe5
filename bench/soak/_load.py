"""The load: deliberations submitted through gRPC at a steady rate, as a client would.

A submission that gets no answer (the API was killed, or restarting) is sent again with the same
task id until the API acknowledges it: ``Deliberate`` is idempotent on the task id, so a retry
after a lost answer is the same deliberation, never a second one. What the API acknowledged is
what the soak later looks for in the stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import grpc

from fleet.client import FleetClient

log = logging.getLogger("soak")

ROLES = ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA")
TASK = "Write a Python function that returns the n-th Fibonacci number ({task_id})"


@dataclass
class Submission:
    task_id: str
    role: str
    rounds: int
    sent_at: float
    """When it was first sent (wall clock)."""
    acked_at: float | None = None
    attempts: int = 0
    last_error: str = ""


@dataclass(frozen=True)
class LoadConfig:
    deliberations: int
    rate_per_s: float
    agents: int = 3
    rounds: tuple[int, ...] = (1,)
    """Cycled over the submissions: ``(1, 1, 1, 2)`` makes every fourth a two-round one."""
    timeout_s: int = 90
    """Each deliberation's deadline (``timeout_seconds``): it ends TIMEOUT at the latest then."""
    give_up_s: float = 120.0
    """How long one submission is retried before it counts as never acknowledged."""
    prefix: str = "soak"


async def submit_all(address: str, config: LoadConfig) -> list[Submission]:
    """Submit ``config.deliberations`` at ``config.rate_per_s``; return when each is acknowledged
    or given up on."""
    t0 = time.time()
    subs = [
        Submission(
            task_id=f"{config.prefix}-{i:05d}",
            role=ROLES[i % len(ROLES)],
            rounds=config.rounds[i % len(config.rounds)],
            sent_at=t0 + i / config.rate_per_s,
        )
        for i in range(config.deliberations)
    ]
    async with FleetClient(address, timeout=5.0) as shared:
        tasks = []
        for s in subs:
            delay = s.sent_at - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            s.sent_at = time.time()
            tasks.append(asyncio.create_task(_submit(shared, address, s, config)))
        await asyncio.gather(*tasks)
    return subs


async def _submit(shared: FleetClient, address: str, s: Submission, config: LoadConfig) -> None:
    give_up = time.monotonic() + config.give_up_s
    client, own = shared, False
    try:
        while True:
            s.attempts += 1
            try:
                await client.deliberate(
                    TASK.format(task_id=s.task_id),
                    task_id=s.task_id,
                    role=s.role,
                    num_agents=config.agents,
                    rounds=s.rounds,
                    timeout_seconds=config.timeout_s,
                )
                s.acked_at = time.time()
                return
            except grpc.aio.AioRpcError as e:
                s.last_error = f"{e.code().name}: {e.details()}"
            if time.monotonic() > give_up:
                log.warning("%s never acknowledged: %s", s.task_id, s.last_error)
                return
            await asyncio.sleep(0.2)
            # A fresh channel: the shared one backs off for ever longer while the API is down.
            if own:
                await client.close()
            client, own = FleetClient(address, timeout=5.0), True
    finally:
        if own:
            await client.close()
