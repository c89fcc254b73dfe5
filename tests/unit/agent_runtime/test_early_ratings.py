"""The actor's early final ratings (``agent_runtime.ray_backend._early_ratings``): started once
every agent of the promised round has answered, joined by exactly the request predicted, never
otherwise.

The review function is a counting stand-in (this is the unit's own logic); the whole path, on
Ray against an OpenAI-compatible server, is tested in
``tests/integration/agent_runtime/test_ray_runtime.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from agent_runtime.api import AgentTurn, ReviewInput, ReviewResult, final_rating
from agent_runtime.ray_backend._early_ratings import EarlyRatings

AGENTS = ("dev-agent-1", "dev-agent-2", "dev-agent-3")


class Reviews:
    """Counts the calls; each answers once ``release`` is set."""

    def __init__(self) -> None:
        self.calls: list[ReviewInput] = []
        self.release = asyncio.Event()

    async def __call__(self, request: ReviewInput) -> ReviewResult:
        self.calls.append(request)
        await self.release.wait()
        return ReviewResult(request.agent_id, (), "m", 1, 1, 1)


def turn(agent: str, *, rate_after: tuple[str, ...] = AGENTS) -> AgentTurn:
    return AgentTurn(
        deliberation_id="d-1",
        agent_id=agent,
        role="DEV",
        round=0,
        task="fib",
        rate_after=rate_after,
    )


ANSWERS = {a: f"answer of {a}" for a in AGENTS}


async def test_the_ratings_start_when_the_last_answer_is_in_and_the_requests_join_them() -> None:
    reviews = Reviews()
    early = EarlyRatings(reviews)
    early.answered(turn("dev-agent-1"), ANSWERS["dev-agent-1"])
    early.answered(turn("dev-agent-2"), ANSWERS["dev-agent-2"])
    await asyncio.sleep(0)
    assert reviews.calls == []  # one answer still missing
    early.answered(turn("dev-agent-3"), ANSWERS["dev-agent-3"])
    await asyncio.sleep(0)
    assert len(reviews.calls) == 3 and early.running == 3
    asked = [final_rating(turn(a), ANSWERS) for a in AGENTS]
    assert sorted(reviews.calls, key=lambda r: r.agent_id) == asked
    pending = [asyncio.ensure_future(early.review(r)) for r in asked]
    await asyncio.sleep(0)
    reviews.release.set()
    results = await asyncio.gather(*pending)
    assert [r.agent_id for r in results] == list(AGENTS)
    assert len(reviews.calls) == 3 and early.joined == 3 and early.running == 0  # no second call


async def test_a_request_other_than_the_predicted_one_is_made_anew() -> None:
    reviews = Reviews()
    early = EarlyRatings(reviews)
    for a in AGENTS:
        early.answered(turn(a), ANSWERS[a])
    await asyncio.sleep(0)
    predicted = final_rating(turn("dev-agent-1"), ANSWERS)
    other = replace(predicted, rubric="another rubric")
    reviews.release.set()
    await early.review(other)
    assert reviews.calls[-1] == other and len(reviews.calls) == 4 and early.joined == 0


@pytest.mark.parametrize("case", ["a turn failed", "nothing promised", "one agent alone"])
async def test_nothing_starts_early_unless_the_whole_promised_round_answered(case: str) -> None:
    reviews = Reviews()
    early = EarlyRatings(reviews)
    if case == "a turn failed":
        early.failed(turn("dev-agent-2"))
        for a in ("dev-agent-1", "dev-agent-3"):
            early.answered(turn(a), ANSWERS[a])
        early.answered(turn("dev-agent-2"), ANSWERS["dev-agent-2"])  # a retry that answered
    elif case == "nothing promised":
        for a in AGENTS:
            early.answered(turn(a, rate_after=()), ANSWERS[a])
    else:
        early.answered(turn("dev-agent-1", rate_after=("dev-agent-1",)), "alone")
    await asyncio.sleep(0)
    assert reviews.calls == [] and early.running == 0
