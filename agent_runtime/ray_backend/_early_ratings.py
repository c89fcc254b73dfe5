"""Final ratings started on the actor as soon as the last round's answers are all in.

A deliberation's last round is followed by the peers' ratings of its answers (peer review on):
the dispatcher receives the answers, then asks each agent to rate the others'. When every agent
of the round sits on one actor (one actor per role, the default), that actor holds all the
answers one Ray reply and one Ray call before the rating calls reach it: about 5 ms of each
deliberation's critical path on a 2-core machine (a Ray hop after a model-length wait costs
2-3.5 ms each way).

So the caller marks the round's turns (``AgentTurn.rate_after``: the agents of the round, when
it will ask each of them for ``final_rating`` right after), and the actor starts those rating
calls itself once it has every one of their answers. When the caller's own request arrives, it
joins the call already running if the request is exactly the one predicted (equal in every
field); anything else (a different request, an answer that failed, a round split across actors)
runs as asked, and an unclaimed early call is dropped. The decision stays the caller's: this
only moves the start of a call it is about to make, never what is asked or what is recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent_runtime.api import AgentTurn, ReviewInput, ReviewResult, final_rating

__all__ = ["EarlyRatings"]

KEEP_S = 60.0
"""How long past its call's own timeout an unclaimed early rating (or an incomplete round) is
kept before it is dropped."""

Review = Callable[[ReviewInput], Awaitable[ReviewResult]]


@dataclass
class _Round:
    answers: dict[str, tuple[AgentTurn, str]] = field(default_factory=dict)
    broken: bool = False
    """An answer of the round failed: what is rated is no longer predictable."""


class EarlyRatings:
    """The actor's early ratings. Loop affinity: the actor's event loop."""

    def __init__(self, review: Review) -> None:
        self._review = review
        self._rounds: dict[tuple[str, int], _Round] = {}
        self._started: dict[str, tuple[ReviewInput, asyncio.Task[ReviewResult]]] = {}
        self.joined = 0
        """Requests answered by an early call (for tests and stats)."""

    @property
    def running(self) -> int:
        return len(self._started)

    def answered(self, turn: AgentTurn, content: str) -> None:
        """``turn`` was answered with ``content``: start the round's ratings once all are in."""
        r = self._round(turn)
        if r is None:
            return
        r.answers[turn.agent_id] = (turn, content)
        if r.broken or set(r.answers) != set(turn.rate_after):
            return
        del self._rounds[(turn.deliberation_id, turn.round)]
        proposals = {agent: text for agent, (_, text) in r.answers.items()}
        loop = asyncio.get_running_loop()
        for t, _ in r.answers.values():
            request = final_rating(t, proposals)
            task = asyncio.ensure_future(self._review(request))
            task.add_done_callback(_retrieved)
            self._started[request.key] = (request, task)
            loop.call_later(t.timeout_s + KEEP_S, self._drop, request.key, task)

    def failed(self, turn: AgentTurn) -> None:
        """``turn`` got no answer: its round's ratings are not started early."""
        r = self._round(turn)
        if r is not None:
            r.broken = True

    async def review(self, request: ReviewInput) -> ReviewResult:
        """``request``'s answer: from the early call made for exactly this request, else a
        call made now."""
        early = self._started.pop(request.key, None)
        if early is not None:
            predicted, task = early
            if predicted == request:
                self.joined += 1
                return await task
            task.cancel()  # a request nobody makes
        return await self._review(request)

    def _round(self, turn: AgentTurn) -> _Round | None:
        if len(turn.rate_after) < 2 or turn.agent_id not in turn.rate_after:
            return None
        key = (turn.deliberation_id, turn.round)
        r = self._rounds.get(key)
        if r is None:
            r = self._rounds[key] = _Round()
            asyncio.get_running_loop().call_later(turn.timeout_s + KEEP_S, self._expire, key, r)
        return r

    def _expire(self, key: tuple[str, int], r: _Round) -> None:
        if self._rounds.get(key) is r:  # never completed
            del self._rounds[key]

    def _drop(self, key: str, task: asyncio.Task[ReviewResult]) -> None:
        early = self._started.get(key)
        if early is not None and early[1] is task:
            del self._started[key]
            task.cancel()


def _retrieved(task: asyncio.Task[ReviewResult]) -> None:
    """An early call nobody claimed still has its outcome taken (never "never retrieved")."""
    if not task.cancelled():
        task.exception()
