"""Test doubles of Fleet's ports, shared by the tests: each *subclasses* the port it stands in
for and this module is type-checked (``make typecheck``, ``test_the_code_is_mypy_strict_clean``),
so a double that lacks a method of its port fails the type check instead of keeping tests green
that never exercise it (a runtime without ``review`` once did, for eight tests).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from agent_runtime.api import (
    AgentRuntime,
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.checks.scoring import assess_candidates
from aggregates import CheckOutcome, PeerReview
from application.councils import CouncilAgentView, CouncilChange, CouncilView
from application.ports import CouncilDirectory, EventFeed, FeedItem

__all__ = [
    "Behaviour",
    "BrokenFeed",
    "Directory",
    "FakeAgentRuntime",
    "NoAgents",
    "ScriptedRuntime",
]

Behaviour = Callable[[AgentTurn], Awaitable[str]]


class FakeAgentRuntime(AgentRuntime):
    """Answers per agent id as told; scores by content length (a stand-in for real checks), and
    peers rate each other by the same length. It subclasses the port, so a method it lacks
    fails the type check (and, at run time, the deliberation), never a test silently."""

    def __init__(self, behaviour: dict[str, Behaviour] | None = None) -> None:
        self.behaviour = behaviour or {}
        self.calls: list[str] = []
        self.reviews: list[str] = []

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        self.calls.append(turn.key)
        act = self.behaviour.get(turn.agent_id)
        content = await act(turn) if act else f"answer from {turn.agent_id}"
        return TurnResult(turn.agent_id, turn.round, content, "fake", 3, 4, 1)

    async def review(self, request: ReviewInput) -> ReviewResult:
        self.reviews.append(f"{request.purpose}:{request.round}:{request.agent_id}")
        reviews = tuple(
            PeerReview(request.agent_id, c.agent_id, min(1.0, len(c.content) / 100), "by length")
            for c in request.candidates
        )
        return ReviewResult(request.agent_id, reviews, "fake", 3, 4, 1)

    def precheck(self, request: AssessmentInput) -> None:
        return None

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        return [
            Assessment(
                c.agent_id, min(1.0, len(c.content) / 100), (CheckOutcome("policy", True, 1.0),)
            )
            for c in request.candidates
        ]

    async def close(self) -> None:
        return None


class ScriptedRuntime(AgentRuntime):
    """Proposals by agent and round; ratings from the Q mark (a stand-in judge); real checks."""

    def __init__(
        self,
        proposals: dict[str, Callable[[AgentTurn], str]],
        *,
        rate_fails: set[str] | None = None,
    ) -> None:
        self.proposals = proposals
        self.rate_fails = rate_fails or set()
        self.turns: list[AgentTurn] = []
        self.reviews: list[ReviewInput] = []
        self.gate: asyncio.Event | None = None
        self.prechecks: list[tuple[int, dict[str, str]]] = []
        """(ratings asked for before it, the texts to check) per ``precheck``."""

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        self.turns.append(turn)
        if self.gate is not None and turn.round > 0:
            await self.gate.wait()
        make = self.proposals.get(turn.agent_id)
        if make is None:
            raise AgentTurnError(f"{turn.agent_id}: no script")
        return TurnResult(turn.agent_id, turn.round, make(turn), "scripted", 10, 20, 1)

    async def review(self, request: ReviewInput) -> ReviewResult:
        self.reviews.append(request)
        if request.agent_id in self.rate_fails:
            raise AgentTurnError("judge offline")
        out = []
        for c in request.candidates:
            m = re.search(r"Q=(\d+)", c.content)
            score = None if m is None else (int(m.group(1)) - 1) / 9
            src = "structured" if m else "fallback"
            out.append(PeerReview(request.agent_id, c.agent_id, score, f"seen {c.agent_id}", src))
        return ReviewResult(request.agent_id, tuple(out), "scripted", 5, 7, 1)

    def precheck(self, request: AssessmentInput) -> None:
        rates_before = sum(r.purpose == "rate" for r in self.reviews)
        self.prechecks.append((rates_before, {c.agent_id: c.content for c in request.candidates}))

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        return assess_candidates(request)

    async def close(self) -> None:
        return None


class Directory(CouncilDirectory):
    """A council directory with one ARCHITECT council (or none), and DEV's (the deliberating
    role: Fleet invents no agents for a role without a council)."""

    def __init__(self, *members: str) -> None:
        agents = tuple(CouncilAgentView(m, "ARCHITECT", model="arch-7b") for m in members)
        self.view = CouncilView("council-architect", "ARCHITECT", agents) if members else None
        devs = tuple(CouncilAgentView(f"dev-agent-{i}", "DEV") for i in (1, 2, 3))
        self.dev = CouncilView("council-dev", "DEV", devs)

    async def list_councils(self) -> list[CouncilView]:
        return [self.dev, *([self.view] if self.view else [])]

    async def council(self, role: str) -> CouncilView | None:
        return {"ARCHITECT": self.view, "DEV": self.dev}.get(role)

    async def history(self, role: str) -> list[CouncilChange]:
        return []


class BrokenFeed(EventFeed):
    """History is empty; following fails after a moment, as a lost connection would."""

    async def history(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        return
        yield  # an async generator that yields nothing

    async def follow(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        await asyncio.sleep(0.05)
        raise ConnectionError("nats: connection closed")
        yield


class NoAgents(AgentRuntime):
    """A runtime with no agents behind it: every call fails as an unreachable one would."""

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        raise AgentTurnError(f"{turn.agent_id}: no agents")

    async def review(self, request: ReviewInput) -> ReviewResult:
        raise AgentTurnError(f"{request.agent_id}: no agents")

    def precheck(self, request: AssessmentInput) -> None:
        return None

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        raise AgentTurnError("no agents to assess with")

    async def close(self) -> None:
        return None
