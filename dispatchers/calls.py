"""A deliberation's agent calls: what a driver asks the agent runtime, and the change on the
deliberation that records each answer (or the failed call, with why).

Stateless: one ``AgentCalls`` serves every driver of a dispatcher; the deliberation a call is
about is passed in, and what the driver does with the change (apply it to its copy, store it in
order) is the driver's (``driver``, ``writes``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from agent_runtime.api import (
    AgentRuntimeError,
    AgentTurn,
    AgentTurnError,
    AssessmentInput,
    Candidate,
    PeerProposal,
    ReviewInput,
    Sampling,
)
from aggregates import AgentAnswer, AgentId, Deliberation
from aggregates.task_code import ACCEPTANCE_TESTS_KEY
from dispatchers.environment import DriverEnvironment
from dispatchers.protocol import latest_proposals

__all__ = ["AgentCalls"]

log = logging.getLogger("dispatchers.deliberations")  # one logger for the dispatcher's lines


class AgentCalls:
    """Builds each agent call of a deliberation from the shared environment, and makes it.

    Loop affinity: the dispatcher's loop.
    """

    def __init__(self, env: DriverEnvironment) -> None:
        self._env = env

    def peer_review(self, d: Deliberation) -> bool:
        """Peers rate the final proposals: on in this dispatcher, and not turned off by the
        client for this deliberation (Orchestrate's ``enable_peer_review``)."""
        return self._env.options.peer_review and d.peer_review

    def assessment(self, d: Deliberation) -> AssessmentInput | None:
        """What scoring ``d`` asks the runtime: its unscored final proposals, with the ratings
        recorded so far; None when every proposal is scored."""
        final = d.final_proposals()
        unscored = {a: p for a, p in final.items() if p.score is None}
        if not unscored:
            return None
        return AssessmentInput(
            deliberation_id=str(d.id),
            role=d.role.value,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            candidates=tuple(
                Candidate(a, p.content, tuple(d.ratings_of(a))) for a, p in sorted(unscored.items())
            ),
            peer_review=self.peer_review(d) and len(final) >= 2,
            check_weights=self._env.options.councils.check_weights(d.role.value),
            metadata=dict(d.metadata),
            acceptance_tests=d.metadata.get(ACCEPTANCE_TESTS_KEY, ""),
        )

    def precheck(self, d: Deliberation) -> None:
        """The final proposals are known: their executable checks can start while the peers
        rate them (they read the text alone), instead of after, on the critical path.

        Called right after the rating calls are made, in the same loop turn, so that on Ray
        the checks travel in the same batch as the ratings, behind them: the actor starts
        the model calls first and checks while the model works. Sent ahead as a call of
        their own, they reached the actor first, and the ratings queued behind the round
        trip and the checking (3.5 ms of a deliberation's overhead at one in flight)."""
        request = self.assessment(d)
        if request is None:
            return
        try:
            self._env.runtime.precheck(request)
        except Exception:  # a hint only: scoring checks them anyway
            log.warning("deliberation %s: early checks not started", d.id, exc_info=True)

    async def context_of(self, d: Deliberation) -> str:
        """The story's context for ``d``'s prompts ("" without a story or a source). A failure
        to build it costs the agents their context, never the deliberation."""
        if self._env.context is None or not d.story_id:
            return ""
        try:
            return await self._env.context.for_deliberation(d)
        except Exception:
            log.warning("deliberation %s: no story context", d.id, exc_info=True)
            return ""

    def sampling_for(self, d: Deliberation, agent: AgentId) -> Sampling:
        index = d.agents.index(agent)
        o = self._env.options
        if self._env.sampling is not None:
            base = self._env.sampling(d.role.value, index, o.model)
            sampling = Sampling(base.model, base.temperature, base.seed, base.persona, o.max_tokens)
        else:
            sampling = o.councils.sampling(d.role.value, index, o.model, o.max_tokens)
        place = d.seats.get(agent)  # the council member recorded in Started: never today's
        if not place:
            return sampling
        temperature, max_tokens = place.get("temperature"), place.get("max_tokens")
        return replace(
            sampling,
            model=place.get("model") or sampling.model,
            endpoint=place.get("endpoint", ""),
            temperature=float(temperature) if temperature else sampling.temperature,
            max_tokens=int(max_tokens) if max_tokens else sampling.max_tokens,
        )

    async def turn(
        self, d: Deliberation, agent: AgentId, round_no: int, rate_after: tuple[str, ...] = ()
    ) -> Callable[[Deliberation], object]:
        """``agent``'s proposal (round 0) or revision (later rounds): the change that records
        it, or the agent's failure with its error (any error of the call counts as one)."""
        peers = latest_proposals(d, before_round=round_no)
        critiques = tuple(rv.text for rv in d.critiques_of(agent, round_no) if rv.text)
        turn = AgentTurn(
            context=await self.context_of(d),
            deliberation_id=str(d.id),
            agent_id=agent,
            role=d.role.value,
            round=round_no,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            peers=tuple(PeerProposal(a, c) for a, c in sorted(peers.items()) if a != agent),
            own_previous=peers.get(agent, ""),
            sampling=self.sampling_for(d, agent),
            timeout_s=self._env.options.call_timeout_s,
            critiques=critiques,
            rate_after=rate_after,
        )
        try:
            result = await self._env.runtime.run_turn(turn)
        except AgentTurnError as e:
            return _agent_failed(agent, round_no, str(e))
        except Exception as e:  # an unexpected runtime error is still an agent failure, named
            return _agent_failed(agent, round_no, f"{type(e).__name__}: {e}")
        s = turn.sampling
        answer = AgentAnswer(
            content=result.content,
            model=result.model,
            tokens=result.completion_tokens,
            latency_ms=result.latency_ms,
            prompt_tokens=result.prompt_tokens,
            temperature=s.temperature,
            seed=s.seed,
            persona=s.persona,
            thinking_retried=result.thinking_retried,
            prompt=result.prompt,
            attempts=result.attempts,
        )
        if round_no == 0:
            return lambda d: d.receive_proposal(agent_id=agent, round=0, answer=answer)
        addressed = sorted({rv.reviewer for rv in d.critiques_of(agent, round_no)})
        return lambda d: d.revise_proposal(
            agent_id=agent, round=round_no, answer=answer, addressed=addressed
        )

    async def ask(
        self, d: Deliberation, agent: AgentId, purpose: str, round_no: int
    ) -> Callable[[Deliberation], object]:
        """A critique (before revising in ``round_no``) or the final rating, by ``agent``: the
        change that records it. A failed call is recorded too, with its error (its ratings are
        missing, not made up); an error that is not the runtime's propagates."""
        if purpose == "critique":
            peers = latest_proposals(d, before_round=round_no)
        else:
            peers = {a: p.content for a, p in d.final_proposals().items()}
        request = ReviewInput(
            deliberation_id=str(d.id),
            agent_id=agent,
            role=d.role.value,
            round=round_no,
            purpose=purpose,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            candidates=tuple(Candidate(a, c) for a, c in sorted(peers.items()) if a != agent),
            sampling=self.sampling_for(d, agent),
            timeout_s=self._env.options.call_timeout_s,
        )
        critique = purpose == "critique"
        try:
            result = await self._env.runtime.review(request)
        except (AgentRuntimeError, TimeoutError) as e:  # the call failed: recorded, with why
            # Only the runtime's own failures: anything else is a bug, and it fails the
            # deliberation with its reason (the supervisor records it) instead of passing for
            # a reviewer that had nothing to say.
            error = str(e) if isinstance(e, AgentRuntimeError) else f"{type(e).__name__}: {e}"
            if critique:
                return lambda d: d.receive_critique(
                    agent_id=agent, round=round_no, reviews=[], error=error
                )
            return lambda d: d.receive_ratings(agent_id=agent, reviews=[], error=error)
        reviews = list(result.reviews)
        if critique:
            return lambda d: d.receive_critique(
                agent_id=agent,
                round=round_no,
                reviews=reviews,
                model=result.model,
                tokens=result.completion_tokens,
                latency_ms=result.latency_ms,
            )
        return lambda d: d.receive_ratings(
            agent_id=agent,
            reviews=reviews,
            model=result.model,
            tokens=result.completion_tokens,
            latency_ms=result.latency_ms,
        )


def _agent_failed(agent: AgentId, round_no: int, error: str) -> Callable[[Deliberation], bool]:
    def change(d: Deliberation) -> bool:
        return d.fail_agent(agent_id=agent, round=round_no, error=error)

    return change
