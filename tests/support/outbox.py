"""The outbox tests' log: every kind of Fleet event that leads to an integration event, and a
plain nats-py reader of ``orchestration.>`` (no Fleet code: what a consumer elsewhere has)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import nats

from aggregates import AgentAnswer, AgentId, CheckOutcome, Plan
from aggregates.story import Phase, Story
from tests.support.deliberations import requested

MESSAGES_PER_ROUND = 1 + 2 + 2 + 3 + 2 + 3 + 3 + 2
"""What ``one_of_each`` leads to: plan approval, the plan's QA role skipped and then the whole
plan (nothing dispatched), two phase changes, a completed deliberation
(dispatched, deliberation completed, task completed), a failed one (dispatched, failed), a
timed-out and a cancelled one (dispatched, failed, their own subject each), and a deliberation
that never got an answer but started (dispatched) and was later failed (failed)."""


def one_of_each(tag: str | None = None) -> list[Any]:
    """Aggregates whose events lead to every subject the outbox publishes on."""
    tag = tag or uuid4().hex[:10]
    now = datetime.now(tz=UTC)
    plan = Plan.approve(
        plan_id=f"p-{tag}", story_id=f"s-{tag}", approved_by="po", approved_at=now,
        roles=["DEV", "QA"],
    )  # fmt: skip
    plan.mark_requested([], {"QA": "the QA role has no council: no deliberation requested"})
    story = Story.register(f"s-{tag}")
    story.change_phase(Phase.DESIGN, Phase.BUILD, now)
    story.change_phase(Phase.BUILD, Phase.TEST, now + timedelta(seconds=1))
    done = requested(f"done-{tag}", story_id=f"s-{tag}", plan_id=f"p-{tag}")
    done.start()
    for k, a in enumerate(done.agents):
        answer = AgentAnswer(content=f"def fib(n): ...  # {k}", model="m", tokens=3, latency_ms=1)
        done.receive_proposal(agent_id=AgentId(a), round=0, answer=answer)
    for k, a in enumerate(done.agents):
        check = CheckOutcome(check_type="lint", passed=True, score=1.0)
        done.score(agent_id=AgentId(a), score=0.2 * (k + 1), checks=[check])
    done.complete()
    failed = requested(f"failed-{tag}", story_id=f"s-{tag}")
    failed.start()
    failed.fail("every agent failed")
    late = requested(f"late-{tag}", timeout_seconds=1)
    late.start()
    late.time_out(now + timedelta(seconds=5))
    cancelled = requested(f"cancel-{tag}")
    cancelled.start()
    cancelled.cancel("asked to")
    quiet = requested(f"quiet-{tag}")
    quiet.start()
    quiet.fail("no answer")
    return [plan, story, done, failed, late, cancelled, quiet]


@dataclass(frozen=True)
class Received:
    seq: int
    subject: str
    body: dict[str, Any]


async def read_all(url: str, *, at_least: int, timeout: float = 20.0) -> list[Received]:
    """Every message on ``orchestration.>`` from the start, once ``at_least`` are there."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe("orchestration.>", durable=None)
        out: list[Received] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            try:
                msgs = await sub.fetch(batch=256, timeout=0.5)
            except TimeoutError:  # nats-py raises its own subclass, or asyncio's own
                if len(out) >= at_least:
                    break
                continue
            for m in msgs:
                await m.ack()
                out.append(Received(m.metadata.sequence.stream, m.subject, json.loads(m.data)))
        return out
    finally:
        await nc.close()
