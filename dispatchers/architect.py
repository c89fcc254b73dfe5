"""The architect's step of an orchestration: after scoring, before the decision.

An orchestration (``Deliberation.OrchestrationRequested`` with ``architect_k`` > 0) is not
completed from the scores alone: the top k candidates by score go to an agent of the ARCHITECT
council (a real model call through the runtime, ``agent_runtime.member.architect``), which
chooses the winner and says why (``ArchitectSelected``). When it gives no usable choice (the
call fails, runs past its time, or names no candidate) the highest score wins and
``ArchitectFellBack`` records why. Then ``Completed`` names that winner.

Like every other step, it is derived from the record: a driver that finds the scores stored and
no selection asks the architect; one that finds a selection completes from it. A dispatcher
killed while the architect thinks leaves no event behind, so its successor asks again, and the
aggregate refuses a second selection if two ever race (``DuplicateProposalError``), so there is
never a double event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from agent_runtime.api import AgentRuntimeError, Candidate, ReviewInput
from aggregates import AgentId, Deliberation, DuplicateProposalError
from dispatchers.environment import DriverEnvironment
from dispatchers.protocol import complete

__all__ = ["ArchitectStep", "architect_timeout"]

log = logging.getLogger("dispatchers.deliberations")

SELECT = "select"
"""The runtime's review purpose for a selection (``agent_runtime.member.architect.SELECT``)."""
DEADLINE_SHARE = 0.8
"""The architect may use this share of the time left before the deadline, so that its fallback
is recorded (and the decision made) before the deliberation would time out."""


def architect_timeout(cap_s: float, deadline: datetime, now: datetime) -> float:
    """Seconds the architect's call may take: ``cap_s``, less when the deadline is near."""
    left = (deadline - now).total_seconds() * DEADLINE_SHARE
    return max(0.05, min(cap_s, left))


class ArchitectStep:
    """A part of a deliberation's driver: the architect's choice, then the decision.

    Stateless: it works through the dispatcher's shared environment (the store, the runtime,
    the councils, the options and the clock), and reads the deliberation from the store.

    Loop affinity: the dispatcher's loop.
    """

    def __init__(self, env: DriverEnvironment) -> None:
        self._env = env

    def _request(
        self, d: Deliberation, candidates: tuple[Candidate, ...], agent_id: str, model: str
    ) -> ReviewInput:
        """The selection call: its sampling and time limit."""
        o = self._env.options
        sampling = o.councils.sampling("ARCHITECT", 0, o.model, o.max_tokens)
        return ReviewInput(
            deliberation_id=str(d.id),
            agent_id=agent_id,
            role="ARCHITECT",
            round=d.rounds - 1,
            purpose=SELECT,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            candidates=candidates,
            sampling=replace(sampling, model=model or sampling.model),
            timeout_s=architect_timeout(
                min(o.architect_timeout_s, o.call_timeout_s), d.deadline, self._env.clock()
            ),
        )

    async def _architect(self) -> tuple[str, str] | None:
        """(agent id, model) of the agent that chooses: the ARCHITECT council's first member
        as the council directory has it now, or the configured agent without a directory;
        None when there is no ARCHITECT council (or it has no members)."""
        if self._env.councils is None:
            return self._env.options.architect_agent, ""
        council = await self._env.councils.council("ARCHITECT")
        if council is None or not council.agents:
            return None
        first = council.agents[0]
        return first.agent_id, first.model or council.model

    async def select_and_complete(self, d_id: UUID) -> None:
        """Record the architect's choice (or the fallback) unless one is recorded, then decide."""
        store = self._env.store
        d = await store.last_known(d_id)
        if d.is_terminal:
            return
        if not d.awaits_architect:
            await store.update(d_id, complete)
            return
        change = await self._choice(d)
        try:
            # One crossing to the store: the choice, then the decision (which lands even when
            # the choice is refused as a duplicate: another process recorded one first).
            await store.update_in_order(d_id, [change, complete])
        except DuplicateProposalError:
            log.info("deliberation %s: the architect's choice was recorded already", d_id)

    async def _choice(self, d: Deliberation) -> Callable[[Deliberation], None]:
        """Ask the architect; the change that records its choice or the fallback and why."""
        shortlist = d.architect_shortlist()
        if len(shortlist) < 2:
            return _fallback("a single candidate: nothing to choose between", "")
        chooser = await self._architect()
        if chooser is None:
            return _fallback("no ARCHITECT council has a member to ask", "")
        final = d.final_proposals()
        request = self._request(
            d, tuple(Candidate(a, final[a].content) for a in shortlist), *chooser
        )
        architect, timeout_s = request.agent_id, request.timeout_s
        try:
            result = await asyncio.wait_for(self._env.runtime.review(request), timeout_s)
        except TimeoutError:
            return _fallback(f"the architect did not answer within {timeout_s:.1f} s", architect)
        except AgentRuntimeError as e:  # a failed call is a recorded fallback, with its error
            return _fallback(f"the architect's call failed: {e}", architect)
        chosen = [r for r in result.reviews if r.score is not None and r.score >= 1.0]
        if len(chosen) != 1 or chosen[0].target not in shortlist:
            why = next((r.text for r in result.reviews if r.text), "")
            return _fallback(why or "the architect's answer named no candidate", architect)
        pick = chosen[0]
        log.info("deliberation %s: the architect chose %s", d.id, pick.target)

        def select(d: Deliberation) -> None:
            d.select_by_architect(
                winner=AgentId(pick.target),
                rationale=pick.text or "no rationale given",
                architect_id=architect,
                model=result.model,
                latency_ms=result.latency_ms,
            )

        return select


def _fallback(reason: str, architect: str) -> Callable[[Deliberation], None]:
    log.info("architect selection fell back to the highest score: %s", reason)

    def change(d: Deliberation) -> None:
        d.fall_back_to_score(reason=reason, architect_id=architect)

    return change
