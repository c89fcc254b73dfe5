"""One deliberation's protocol, step by step: proposals, critiques and revisions, ratings,
scores, the decision. The dispatcher (``deliberations``) decides *which* deliberations this
process drives and supervises each driver; these are the steps a driver takes.

Every step's outcome is an event, written through the store: what is outstanding is always
derived from the aggregate, so a restarted driver resumes from the record. See
``deliberations``' module docstring for the order of the steps and the latency work behind it.

(Over 400 lines on purpose: the steps wait on each other through the driver's state, Started
before answers, answers before reviews, scores before the decision, and read best as one class;
the pure parts live in ``councils``, ``sampling`` and the aggregate.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from uuid import UUID

from agent_runtime.api import (
    AgentRuntime,
    AgentRuntimeError,
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    Candidate,
    PeerProposal,
    ReviewInput,
    Sampling,
)
from aggregates import (
    AgentAnswer,
    AgentId,
    Deliberation,
    DeliberationClosedError,
    DuplicateProposalError,
)
from application.ports import DeliberationStore
from dispatchers.architect import SELECT, ArchitectStep, architect_timeout
from dispatchers.councils import Councils, Seating
from dispatchers.ports import ContextSource

ACCEPTANCE_TESTS_KEY = "acceptance_tests"
"""The key of ``TaskConstraints.metadata`` that carries a task's acceptance tests (the seed's
clients can send them there; ``fleet deliberate --tests`` does)."""

log = logging.getLogger("dispatchers.deliberations")  # one logger for the dispatcher's lines

__all__ = [
    "DeliberationProtocol",
    "DispatcherOptions",
    "retrieved",
    "start_change",
    "start_seated",
    "utc_now",
]


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True)
class DispatcherOptions:
    call_timeout_s: float = 120.0
    """Upper bound for one agent call (the deliberation's own deadline may end it sooner)."""
    model: str = ""
    """The model name agents ask the endpoint for (a council may name its own per agent)."""
    max_tokens: int = 384
    peer_review: bool = True
    """Agents rate each other's final proposals, and the ratings weigh in the score."""
    councils: Councils = field(default_factory=Councils)
    architect_agent: str = "architect-agent-1"
    """The agent that chooses an orchestration's winner (``architect``) where no council
    directory is wired (with one, the ARCHITECT council's first member chooses)."""
    architect_timeout_s: float = 60.0
    """Upper bound for the architect's call (less when the deadline is nearer): then the
    highest score wins, and the fallback says why."""


class DeliberationProtocol(ArchitectStep):
    """The steps of driving one deliberation; ``DeliberationDispatcher`` is the one class that
    uses them (a mixin, so the two parts share the driver's state without passing it around).

    Loop affinity: the dispatcher's loop.
    """

    _store: DeliberationStore
    _runtime: AgentRuntime
    _options: DispatcherOptions
    _sampling: Callable[[str, int, str], Sampling] | None
    _clock: Callable[[], datetime]
    _context: ContextSource | None
    _starting: dict[UUID, asyncio.Future[Deliberation]]
    _answers: dict[UUID, list[asyncio.Future[None]]]

    async def _drive(self, d: Deliberation) -> None:
        d_id = d.id
        for round_no in range(d.rounds):
            if d.is_terminal:
                return
            if round_no == 0:
                asked = d.outstanding(0)
                rate_after = self._rate_after(d, 0, asked)
                await asyncio.gather(*(self._turn(d, a, 0, rate_after) for a in asked))
            else:
                await self._answers_stored(d_id)
                d = await self._store.last_known(d_id)
                if len(d.participants(round_no)) < 2:
                    break  # nobody to learn from: the proposals stand
                await self._critique_round(d_id, round_no)
                d = await self._store.last_known(d_id)
                done = d.answered(round_no)
                asked = [a for a in d.participants(round_no) if a not in done]
                rate_after = self._rate_after(d, round_no, asked)
                await asyncio.gather(*(self._turn(d, a, round_no, rate_after) for a in asked))
        # ``d`` is the driver's copy with this round's answers applied; their writes may still be
        # in flight, and the ratings and scores below are queued behind them.
        if d.is_terminal:
            return
        last: list[Callable[[Deliberation], object]] = []
        if self._peer_review(d) and len(d.final_proposals()) >= 2:
            last = await self._rate(d)
        await self._conclude(d, last)

    def _peer_review(self, d: Deliberation) -> bool:
        """Peers rate the final proposals: on in this dispatcher, and not turned off by the
        client for this deliberation (Orchestrate's ``enable_peer_review``)."""
        return self._options.peer_review and d.peer_review

    def _rate_after(
        self, d: Deliberation, round_no: int, asked: Sequence[AgentId]
    ) -> tuple[str, ...]:
        """``AgentTurn.rate_after`` for the turns of ``round_no`` asked of ``asked``: those
        agents, when their answers will be the final proposals that ``_rate`` asks each of them
        to rate (the last round, peer review on, every agent with a proposal asked again);
        empty otherwise, so a runtime never starts a rating that will not be asked for."""
        if not self._peer_review(d) or round_no != d.rounds - 1 or len(asked) < 2:
            return ()
        if not set(d.final_proposals()) <= set(asked):
            return ()
        return tuple(asked)

    async def _critique_round(self, d_id: UUID, round_no: int) -> None:
        d = await self._store.last_known(d_id)
        critics = [a for a in d.participants(round_no) if a not in d.critiqued(round_no)]

        async def critique(agent: AgentId) -> None:
            await self._record(d_id, await self._ask(d, agent, "critique", round_no))

        await asyncio.gather(*(critique(a) for a in critics))

    async def _rate(self, d: Deliberation) -> list[Callable[[Deliberation], object]]:
        """Ask the peers to rate the final proposals; apply every rating to the copy ``d``.

        Ratings that come back while others are still awaited are stored in the background
        (after the proposals), as answers are; the last to come back are returned unrecorded,
        so that ``_conclude`` stores them in the same write as the scores and the decision they
        lead to: one crossing to the store after the last answer instead of two."""
        proposals = list(self._answers.get(d.id, ()))
        raters = [a for a in d.final_proposals() if a not in d.rated()]
        asking = {asyncio.ensure_future(self._ask(d, a, "rate", d.rounds - 1)) for a in raters}
        # Behind the ratings, in the same loop turn: see ``_precheck``.
        asyncio.get_running_loop().call_soon(self._precheck, d)
        try:
            while asking:
                done, asking = await asyncio.wait(asking, return_when=asyncio.FIRST_COMPLETED)
                changes = [t.result() for t in done]
                if not asking:
                    for change in changes:
                        with contextlib.suppress(Exception):  # the store decides (see _answer)
                            change(d)
                    d.collect_events()
                    return changes
                for change in changes:
                    self._answer(d, change, after=proposals)
        finally:
            for t in asking:
                t.cancel()
        return []

    def _assessment(self, d: Deliberation) -> AssessmentInput | None:
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
            peer_review=self._peer_review(d) and len(final) >= 2,
            check_weights=self._options.councils.check_weights(d.role.value),
            metadata=dict(d.metadata),
            acceptance_tests=d.metadata.get(ACCEPTANCE_TESTS_KEY, ""),
        )

    def _precheck(self, d: Deliberation) -> None:
        """The final proposals are known: their executable checks can start while the peers
        rate them (they read the text alone), instead of after, on the critical path.

        Called right after the rating calls are made, in the same loop turn, so that on Ray
        the checks travel in the same batch as the ratings, behind them: the actor starts
        the model calls first and checks while the model works. Sent ahead as a call of
        their own, they reached the actor first, and the ratings queued behind the round
        trip and the checking (3.5 ms of a deliberation's overhead at one in flight)."""
        request = self._assessment(d)
        if request is None:
            return
        try:
            self._runtime.precheck(request)
        except Exception:  # a hint only: scoring checks them anyway
            log.warning("deliberation %s: early checks not started", d.id, exc_info=True)

    async def _conclude(
        self, d: Deliberation, ratings: list[Callable[[Deliberation], object]]
    ) -> None:
        """Store the last ratings, the scores and the decision, scored from the copy ``d``.

        One ordered write, once the answers in flight are stored: each score checks that
        the stored deliberation holds exactly the proposal and ratings it was computed from
        (``_require_assessed``), so a copy that missed another process's write scores nothing.
        After any refused part, the scores are computed again from the stored state (the path a
        restarted dispatcher takes too).
        """
        request = self._assessment(d)
        assessments = [] if request is None else await self._runtime.assess(request)
        changes = [*ratings, *_scores(assessments, basis=request), *_decision(d)]
        await self._started(d.id)
        await self._answers_stored(d.id)  # the proposals and earlier ratings: long done, mostly
        try:
            await self._store.update_in_order(d.id, changes)
        except DeliberationClosedError:
            raise
        except Exception as e:  # a refused part: the stored state decides
            log.info("deliberation %s: scoring again from the stored state (%s)", d.id, e)
            d = await self._store.last_known(d.id)  # every answer is stored: awaited above
            if not d.is_terminal:
                await self._score_and_complete(d)
            return
        if d.architect_k > 0:
            await self._select_and_complete(d.id)

    async def _score_and_complete(self, d: Deliberation) -> None:
        """Score ``d`` as stored, then decide (each score, then Completed, in this order)."""
        request = self._assessment(d)
        assessments = [] if request is None else await self._runtime.assess(request)
        # Completed is stored only once every score is (and the aggregate refuses to complete
        # with a proposal unscored), so a crash in between leaves scores that a restarted
        # dispatcher completes from. Separate one-event writes rather than one atomic batch:
        # batches are serialised per stream, and fifty deliberations finishing together would
        # queue behind each other.
        await self._store.update_in_order(d.id, [*_scores(assessments, basis=None), *_decision(d)])
        if d.architect_k > 0:
            await self._select_and_complete(d.id)

    # ------------------------------------------------------------------ agent calls

    async def _context_of(self, d: Deliberation) -> str:
        """The story's context for ``d``'s prompts ("" without a story or a source). A failure
        to build it costs the agents their context, never the deliberation."""
        if self._context is None or not d.story_id:
            return ""
        try:
            return await self._context.for_deliberation(d)
        except Exception:
            log.warning("deliberation %s: no story context", d.id, exc_info=True)
            return ""

    def _architect_request(
        self, d: Deliberation, candidates: tuple[Candidate, ...], agent_id: str, model: str
    ) -> ReviewInput:
        o = self._options
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
                min(o.architect_timeout_s, o.call_timeout_s), d.deadline, self._clock()
            ),
        )

    def _sampling_for(self, d: Deliberation, agent: AgentId) -> Sampling:
        index = d.agents.index(agent)
        o = self._options
        if self._sampling is not None:
            base = self._sampling(d.role.value, index, o.model)
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

    async def _turn(
        self, d: Deliberation, agent: AgentId, round_no: int, rate_after: tuple[str, ...] = ()
    ) -> None:
        peers = _latest(d, before_round=round_no)
        critiques = tuple(rv.text for rv in d.critiques_of(agent, round_no) if rv.text)
        turn = AgentTurn(
            context=await self._context_of(d),
            deliberation_id=str(d.id),
            agent_id=agent,
            role=d.role.value,
            round=round_no,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            peers=tuple(PeerProposal(a, c) for a, c in sorted(peers.items()) if a != agent),
            own_previous=peers.get(agent, ""),
            sampling=self._sampling_for(d, agent),
            timeout_s=self._options.call_timeout_s,
            critiques=critiques,
            rate_after=rate_after,
        )
        try:
            result = await self._runtime.run_turn(turn)
        except AgentTurnError as e:
            self._answer(d, _agent_failed(agent, round_no, str(e)))
            return
        except Exception as e:  # an unexpected runtime error is still an agent failure, named
            self._answer(d, _agent_failed(agent, round_no, f"{type(e).__name__}: {e}"))
            return
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
            self._answer(d, lambda d: d.receive_proposal(agent_id=agent, round=0, answer=answer))
            return
        addressed = sorted({rv.reviewer for rv in d.critiques_of(agent, round_no)})
        self._answer(
            d,
            lambda d: d.revise_proposal(
                agent_id=agent, round=round_no, answer=answer, addressed=addressed
            ),
        )

    async def _ask(
        self, d: Deliberation, agent: AgentId, purpose: str, round_no: int
    ) -> Callable[[Deliberation], object]:
        """A critique (before revising in ``round_no``) or the final rating, by ``agent``: the
        change that records it. A failed call is recorded too, with its error (its ratings are
        missing, not made up); an error that is not the runtime's propagates."""
        if purpose == "critique":
            peers = _latest(d, before_round=round_no)
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
            sampling=self._sampling_for(d, agent),
            timeout_s=self._options.call_timeout_s,
        )
        critique = purpose == "critique"
        try:
            result = await self._runtime.review(request)
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

    def _answer(
        self,
        d: Deliberation,
        change: Callable[[Deliberation], object],
        *,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        """Apply an agent's answer to the driver's copy ``d`` now; store it in the background,
        once the writes ``after`` (an earlier phase's answers) are done.

        The next phase (the peers' ratings) starts from the copy at once instead of after the
        write, and whatever is recorded next waits for the write first (``_record``), so the
        stream holds the protocol's order. The copy's own events are dropped: only the store's
        count. If the store refuses the answer (another process recorded one first), the copy
        may differ from it until the driver reads the stored state again, before scoring.
        """
        with contextlib.suppress(Exception):  # the store decides; its error surfaces there
            change(d)
        d.collect_events()
        write = asyncio.ensure_future(self._record(d.id, change, after_answers=False, after=after))
        self._answers.setdefault(d.id, []).append(write)

    async def _answers_stored(self, d_id: UUID, *, raising: bool = True) -> None:
        """Wait until every answer write of ``d_id`` in flight is done; raise the first error.

        Waiting does not cancel them: a driver cancelled meanwhile leaves them to land."""
        writes = list(self._answers.get(d_id, ()))
        if not writes:
            return
        await asyncio.wait(writes)
        left = [w for w in self._answers.get(d_id, ()) if not w.done()]
        if left:
            self._answers[d_id] = left
        else:
            self._answers.pop(d_id, None)
        errors = [e for w in writes if not w.cancelled() and (e := w.exception()) is not None]
        if raising and errors:
            raise errors[0]

    async def _record(
        self,
        d_id: UUID,
        change: Callable[[Deliberation], object],
        *,
        after_answers: bool = True,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        await self._started(d_id)
        if after:  # their errors are reported by ``_answers_stored``
            await asyncio.wait(after)
        if after_answers:
            await self._answers_stored(d_id)  # no review or score lands before the answers
        try:
            await self._store.update(d_id, change)
        except DuplicateProposalError:
            log.info("deliberation %s: duplicate answer ignored", d_id)

    async def _started(self, d_id: UUID) -> None:
        """Wait until Started is stored, if its write is in flight: no answer lands before it
        (and its failure ends the driver). No suspension when it is stored already, so a write
        queued after this keeps its place behind the writes queued before it."""
        started = self._starting.get(d_id)
        if started is not None:
            await asyncio.shield(started)


def _agent_failed(agent: AgentId, round_no: int, error: str) -> Callable[[Deliberation], bool]:
    def change(d: Deliberation) -> bool:
        return d.fail_agent(agent_id=agent, round=round_no, error=error)

    return change


def retrieved(write: asyncio.Future[None]) -> None:
    """A done-callback that takes an abandoned write's outcome, so that it is not reported as
    never retrieved (the driver that started it ended; the events say what landed)."""
    if not write.cancelled() and write.exception() is not None:
        log.warning("an answer write of an ended driver failed: %s", write.exception())


class StaleCopyError(Exception):
    """A score computed from the driver's copy does not match the stored deliberation."""


def _scores(
    assessments: list[Assessment], *, basis: AssessmentInput | None
) -> list[Callable[[Deliberation], None]]:
    """A change recording each assessment's score. With ``basis`` (what was assessed), each
    first checks that the stored deliberation holds exactly those proposals and ratings."""

    def score(a: Assessment) -> Callable[[Deliberation], None]:
        agent = AgentId(a.agent_id)

        def change(d: Deliberation) -> None:
            if basis is not None:
                _require_assessed(d, basis)
            if d.final_proposals()[agent].score is None:  # a restart may find it scored
                d.score(agent_id=agent, score=a.score, checks=list(a.checks))

        return change

    return [score(a) for a in assessments]


def _require_assessed(d: Deliberation, basis: AssessmentInput) -> None:
    final = d.final_proposals()
    for c in basis.candidates:
        agent = AgentId(c.agent_id)
        p = final.get(agent)
        if p is None or p.content != c.content or tuple(d.ratings_of(agent)) != c.peer_reviews:
            raise StaleCopyError(f"deliberation {d.id}: {agent} was scored from an older state")


def _complete(d: Deliberation) -> None:
    d.complete()


def _decision(d: Deliberation) -> list[Callable[[Deliberation], None]]:
    """The decision that follows the scores at once: none in an orchestration with an architect
    (its step, ``ArchitectStep``, comes between)."""
    return [] if d.architect_k > 0 else [_complete]


def start_change(d: Deliberation) -> Deliberation:
    d.start()  # idempotent: a no-op once started, or closed
    return d


def start_seated(d: Deliberation, *, seating: Seating) -> Deliberation:
    """Start with the council's members (``councils.seat``), recorded in Started."""
    d.start(seating.agents, seats=seating.seats, council_version=seating.council_version)
    return d


def _latest(d: Deliberation, *, before_round: int) -> dict[AgentId, str]:
    """Each agent's latest proposal from the rounds before ``before_round``."""
    latest: dict[AgentId, str] = {}
    for (agent, r), p in sorted(d.proposals.items(), key=lambda kv: kv[0][1]):
        if r < before_round:
            latest[agent] = p.content
    return latest
