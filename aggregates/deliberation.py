"""The Deliberation aggregate: one council of agents working on one task, as a state machine.

PENDING → IN_PROGRESS → COMPLETED | FAILED | TIMEOUT | CANCELLED. Terminal states are final: a
proposal that arrives after one is recorded as late and changes nothing. Every decision a later
reader needs (the deadline, the winner, the ranking, who was missing at a timeout) is written into
an event, never re-derived on read.

Public command methods guard; private ``@event`` mutators change state. Mutators also run on
replay, where ``__init__`` checks do not, so no check may live in a mutator.

Length: over 400 lines on purpose: it is one state machine (request, propose, critique, revise,
rate, score, decide, time out), and its guards and mutators are read together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, Self, cast
from uuid import UUID

from eventsourcing.domain import Aggregate, BaseAggregate, MutableOrImmutableAggregate, event
from eventsourcing.domain import Snapshot as BaseSnapshot

from aggregates.errors import (
    DeadlineNotReachedError,
    DeliberationClosedError,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
)
from aggregates.ids import deliberation_id
from aggregates.snapshot_state import SnapshotCodec
from aggregates.values import (
    MAX_AGENTS,
    MAX_ROUNDS,
    MAX_TASK_BYTES,
    AgentAnswer,
    AgentId,
    CheckOutcome,
    DeliberationStatus,
    PeerReview,
    Role,
)


@dataclass
class ProposalState:
    """One agent's answer in one round, as the aggregate holds it."""

    agent_id: AgentId
    round: int
    content: str
    model: str
    tokens: int
    latency_ms: int
    received_at: datetime
    prompt_tokens: int = 0
    temperature: float | None = None
    seed: int | None = None
    persona: str = ""
    score: float | None = None
    checks: list[CheckOutcome] = field(default_factory=list)


@dataclass
class FailureState:
    agent_id: AgentId
    round: int
    error: str


RATING_ROUND = -1
"""The key ``review_errors`` files a failed final-rating call under (it belongs to no round)."""

_ANSWER_FIELDS = tuple(f.name for f in fields(AgentAnswer))
"""What a proposal or revision event records of an ``AgentAnswer``."""


class Deliberation(Aggregate):
    """A council of ``num_agents`` agents of one ``role`` deliberating on ``task``."""

    # Orchestration state. Class-level defaults, set only by the orchestration events'
    # mutators: a deliberation that is no orchestration (and an older snapshot) reads these.
    architect_k: int = 0
    """Candidates the architect chooses among; 0: no architect selection."""
    peer_review: bool = True
    """False when the client, or the role's council, turned peer review off for this one."""
    context_options: dict[str, Any] | None = None
    """How the story's context in its agents' prompts is shaped (Orchestrate's
    ``context_options``: ``include_timeline``, ``include_decisions``, ``include_summaries``,
    ``max_events``, ``scopes``); None: the dispatcher's default prompt context."""
    case_id: str = ""
    orchestrated: bool = False
    architect_winner: str = ""
    architect_rationale: str = ""
    architect_fallback: str = ""
    """Why the highest score won instead of the architect's choice ("" when it chose)."""
    architect_id: str = ""
    architect_candidates: tuple[str, ...] = ()

    class_version = 3
    """Of the snapshot state: version 2 holds ``trace_context``, version 3 ``seats``; older
    snapshots upcast."""

    @staticmethod
    def upcast_v1_v2(state: dict[str, object]) -> None:
        state["trace_context"] = ""

    @staticmethod
    def upcast_v2_v3(state: dict[str, object]) -> None:
        state["seats"] = {}
        state["council_version"] = 0

    class Snapshot(BaseSnapshot):
        """The aggregate's state, encoded so the JSON transcoder can store it (see
        ``aggregates.snapshot_state``); a long deliberation then reloads from its latest
        snapshot plus the events after it."""

        @classmethod
        def take(cls, aggregate: MutableOrImmutableAggregate[UUID]) -> Self:
            snapshot = super().take(aggregate)
            # The state is a dict, and the codec encodes a dict as a dict.
            state = cast(dict[str, object], _SNAPSHOT_CODEC.encode(snapshot.state))
            return cls(
                originator_id=snapshot.originator_id,
                originator_version=snapshot.originator_version,
                timestamp=snapshot.timestamp,
                topic=snapshot.topic,
                state=state,
            )

        def mutate(self, _: None) -> BaseAggregate[UUID]:
            decoded = BaseSnapshot(
                originator_id=self.originator_id,
                originator_version=self.originator_version,
                timestamp=self.timestamp,
                topic=self.topic,
                state=cast(dict[str, object], _SNAPSHOT_CODEC.decode(self.state)),
            )
            return decoded.mutate(None)

    class Event(Aggregate.Event):
        """Base of the deliberation's events: mutators can read the time of the event applied.

        The library sets ``modified_on`` only after a mutator runs, so a mutator that used it
        would record the previous event's time.
        """

        # Typed loosely: eventsourcing's own mutate (generic over the aggregate) would not let an
        # override name this aggregate's class.
        def mutate(self, aggregate: Any) -> Any:
            if aggregate is not None:
                aggregate.event_time = self.timestamp
            return super().mutate(aggregate)

    class Requested(Aggregate.Created):
        """A deliberation was asked for, with everything the dispatcher needs (the deadline too).

        Version 2 added ``trace_context``: the W3C ``traceparent`` of the call that asked for it
        (empty when tracing is off), so the dispatcher's work joins that trace from any process.
        Version-1 events upcast with none. Version 3 added ``peer_review``: whether peers rate
        the final proposals, decided when it was requested (the client's choice, else the role's
        council's); older events upcast with peer review on, as they ran.
        """

        class_version = 3

        task_id: str
        task: str
        role: str
        num_agents: int
        rounds: int
        rubric: str
        requirements: list[str]
        metadata: dict[str, str]
        timeout_seconds: int
        deadline: datetime
        plan_id: str
        story_id: str
        requested_by: str
        trace_context: str
        peer_review: bool

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state.update(trace_context="")

        @staticmethod
        def upcast_v2_v3(state: dict[str, object]) -> None:
            state.update(peer_review=True)

    class Started(Event):
        """The dispatcher handed the work to these agents (the council for this deliberation).

        Version 2 added the council as it stood when the deliberation started: ``seats`` (each
        agent id → the council member sitting there, its model and endpoint) and
        ``council_version`` (the Council aggregate's version), so the deliberation keeps its
        council, and its history stays true, whatever the council becomes. Version-1 events
        upcast with none (agents then take the node's defaults, as they did).
        """

        class_version = 2

        agents: list[str]
        seats: dict[str, dict[str, str]]
        council_version: int

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state.update(seats={}, council_version=0)

    class ProposalReceived(Event):
        """An agent's answer for a round, with how it was sampled (so diversity is on record).

        Version 2 added ``prompt_tokens`` and the sampling (``temperature``, ``seed``,
        ``persona``); version-1 events upcast with those unknown (None, "").
        Version 3 added ``thinking_retried``: the model spent its whole budget thinking and the
        answer came from a second call with thinking off. Older events upcast with False (no
        earlier Fleet retried).
        Version 4 added ``prompt`` (the chat as sent: ``{"role", "content"}`` per message) and
        ``attempts`` (HTTP requests the call took, retries included); older events upcast with
        ``[]`` and 0, which readers show as "not recorded".
        """

        class_version = 4

        agent_id: str
        round: int
        content: str
        model: str
        tokens: int
        latency_ms: int
        prompt_tokens: int
        temperature: float | None
        seed: int | None
        persona: str
        thinking_retried: bool
        prompt: list[dict[str, str]]
        attempts: int

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state.update(prompt_tokens=0, temperature=None, seed=None, persona="")

        @staticmethod
        def upcast_v2_v3(state: dict[str, object]) -> None:
            state.update(thinking_retried=False)

        @staticmethod
        def upcast_v3_v4(state: dict[str, object]) -> None:
            state.update(prompt=[], attempts=0)

        def apply(self, aggregate: Deliberation) -> None:
            # A plain apply rather than an @event mutator: eventsourcing re-creates decorated
            # event classes, which would cut ProposalRevised off from this class, and readers
            # that fold ProposalReceived must see revisions as proposals too.
            aggregate._apply_proposal(self)

    class ProposalRevised(ProposalReceived):
        """An agent's proposal for a later round, revised after reading its peers' work and the
        critiques of its own. A ProposalReceived too (readers that fold proposals take it as the
        agent's latest); ``addressed`` names the reviewers whose critiques it was shown."""

        addressed: list[str]

    class CritiqueReceived(Event):
        """One agent's critiques of its peers' previous-round proposals (round >= 1), each with a
        rating; ``error`` is set when the call failed (then ``reviews`` is empty)."""

        agent_id: str
        round: int
        reviews: list[dict[str, Any]]
        model: str
        tokens: int
        latency_ms: int
        error: str

    class PeerRatingsReceived(Event):
        """One agent's ratings of its peers' final proposals against the rubric and
        requirements: the peer part of the score. ``error`` as in CritiqueReceived."""

        agent_id: str
        reviews: list[dict[str, Any]]
        model: str
        tokens: int
        latency_ms: int
        error: str

    class LateProposalReceived(Event):
        """An answer that came after a terminal state: kept for the record, changes nothing."""

        agent_id: str
        round: int
        content: str
        model: str
        status_at_arrival: str

    class AgentFailed(Event):
        agent_id: str
        round: int
        error: str

    class ProposalScored(Event):
        """Score in [0, 1] and the checks behind it (the seed's CheckSuite, flattened)."""

        agent_id: str
        score: float
        checks: list[dict[str, Any]]

    class Completed(Event):
        winner: str
        ranking: list[str]

    class TimedOut(Event):
        received: list[str]
        missing: list[str]

    class Failed(Event):
        reason: str

    class Cancelled(Event):
        reason: str

    class OrchestrationRequested(Event):
        """Orchestrate asked for this deliberation (recorded with Requested, in one write):
        after scoring, an architect picks the winner among the top ``architect_k`` candidates
        (0: no selection, the highest score wins); ``peer_review`` is the client's choice for
        this deliberation; ``case_id`` is the seed's case, kept for the record.

        Version 2 added ``context_options``: how the client asked the story's context in the
        agents' prompts to be shaped (empty: the default); version-1 events upcast with none."""

        class_version = 2

        architect_k: int
        peer_review: bool
        case_id: str
        context_options: dict[str, Any]

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state.update(context_options={})

    class ArchitectSelected(Event):
        """An agent of the ARCHITECT council chose the winner among ``candidates`` (the top k
        by score, best first) and said why."""

        winner: str
        rationale: str
        candidates: list[str]
        architect_id: str
        model: str
        latency_ms: int

    class ArchitectFellBack(Event):
        """The architect gave no usable choice (failed, timed out, answered unparseably, or
        there was nothing to choose between): the highest score wins, and ``reason`` says why."""

        winner: str
        reason: str
        candidates: list[str]
        architect_id: str

    # ------------------------------------------------------------------ creation

    @classmethod
    def request(
        cls,
        *,
        task_id: str,
        task: str,
        role: Role | str,
        num_agents: int,
        rounds: int,
        requested_at: datetime,
        timeout_seconds: int,
        rubric: str = "",
        requirements: list[str] | None = None,
        metadata: dict[str, str] | None = None,
        plan_id: str = "",
        story_id: str = "",
        requested_by: str = "",
        trace_context: str = "",
        peer_review: bool = True,
    ) -> Deliberation:
        """Validate a request and create the aggregate (guards live here, not in ``__init__``)."""
        role_value = Role.parse(role).value
        if not task_id.strip():
            raise InvalidDeliberationError("task_id", "must not be empty")
        if not task.strip():
            raise InvalidDeliberationError("task_description", "must not be empty")
        if len(task.encode()) > MAX_TASK_BYTES:
            raise InvalidDeliberationError(
                "task_description", f"is {len(task.encode())} bytes; at most {MAX_TASK_BYTES}"
            )
        if not 1 <= num_agents <= MAX_AGENTS:
            raise InvalidDeliberationError("num_agents", f"{num_agents} not in 1..{MAX_AGENTS}")
        if not 1 <= rounds <= MAX_ROUNDS:
            raise InvalidDeliberationError("rounds", f"{rounds} not in 1..{MAX_ROUNDS}")
        if timeout_seconds <= 0:
            raise InvalidDeliberationError("timeout_seconds", f"{timeout_seconds} must be > 0")
        # The id derives from the client's task id, so a repeated Deliberate cannot create two.
        return cls._create(
            cls.Requested,
            id=deliberation_id(task_id),
            task_id=task_id,
            task=task,
            role=role_value,
            num_agents=num_agents,
            rounds=rounds,
            rubric=rubric,
            requirements=list(requirements or []),
            metadata=dict(metadata or {}),
            timeout_seconds=timeout_seconds,
            deadline=requested_at + timedelta(seconds=timeout_seconds),
            plan_id=plan_id,
            story_id=story_id,
            requested_by=requested_by,
            trace_context=trace_context,
            peer_review=peer_review,
        )

    @event(Requested)
    def __init__(
        self,
        *,
        task_id: str,
        task: str,
        role: str,
        num_agents: int,
        rounds: int,
        rubric: str,
        requirements: list[str],
        metadata: dict[str, str],
        timeout_seconds: int,
        deadline: datetime,
        plan_id: str,
        story_id: str,
        requested_by: str,
        trace_context: str,
        peer_review: bool,
    ) -> None:
        if not peer_review:  # the class default (on) otherwise: older snapshots read it too
            self.peer_review = False
        self.task_id = task_id
        self.task = task
        self.role = Role(role)
        self.num_agents = num_agents
        self.rounds = rounds
        self.rubric = rubric
        self.requirements = list(requirements)
        self.metadata = dict(metadata)
        self.timeout_seconds = timeout_seconds
        self.deadline = deadline
        self.plan_id = plan_id
        self.story_id = story_id
        self.requested_by = requested_by
        self.trace_context = trace_context
        self.status = DeliberationStatus.PENDING
        self.agents: list[AgentId] = []
        self.seats: dict[str, dict[str, str]] = {}
        """Agent id → the council member in that seat (``member``, ``model``, ``endpoint``)."""
        self.council_version = 0
        self.proposals: dict[tuple[AgentId, int], ProposalState] = {}
        self.failures: dict[tuple[AgentId, int], FailureState] = {}
        self.late: list[AgentId] = []
        self.critiques: dict[tuple[AgentId, int], list[PeerReview]] = {}
        self.ratings: dict[AgentId, list[PeerReview]] = {}
        self.review_errors: dict[tuple[AgentId, int], str] = {}
        """Failed critique (round >= 1) or rating (round -1) calls, by (reviewer, round)."""
        self.winner: AgentId | None = None
        self.ranking: list[AgentId] = []
        self.missing: list[AgentId] = []
        self.reason = ""
        self.finished_at: datetime | None = None
        self.event_time: datetime = self.created_on

    # ------------------------------------------------------------------ queries

    @property
    def is_terminal(self) -> bool:
        return self.status.is_terminal

    @property
    def requested_at(self) -> datetime:
        return self.created_on

    def default_agents(self) -> list[AgentId]:
        """The council's agent ids: stable per role and position, so recovery finds them again."""
        return [AgentId(f"{self.role.value.lower()}-agent-{i + 1}") for i in range(self.num_agents)]

    def answered(self, round_no: int) -> set[AgentId]:
        """Agents with a proposal or a failure recorded for ``round_no``."""
        keys = set(self.proposals) | set(self.failures)
        return {a for (a, r) in keys if r == round_no}

    def outstanding(self, round_no: int) -> list[AgentId]:
        """Agents still owing an answer for ``round_no``, in council order."""
        done = self.answered(round_no)
        return [a for a in self.agents if a not in done]

    def final_proposals(self) -> dict[AgentId, ProposalState]:
        """Each agent's latest proposal (the last round it answered)."""
        latest: dict[AgentId, ProposalState] = {}
        for (agent, _), p in sorted(self.proposals.items(), key=lambda kv: kv[0][1]):
            latest[agent] = p
        return latest

    def participants(self, round_no: int) -> list[AgentId]:
        """Agents taking part in ``round_no``: round 0 the council; later rounds those with a
        proposal from an earlier round (an agent that never proposed has nothing to revise)."""
        if round_no == 0:
            return list(self.agents)
        have = {a for (a, r) in self.proposals if r < round_no}
        return [a for a in self.agents if a in have]

    def critiqued(self, round_no: int) -> set[AgentId]:
        """Agents whose critique call for ``round_no`` is recorded (answered or failed)."""
        return {a for (a, r) in self.critiques if r == round_no} | {
            a for (a, r) in self.review_errors if r == round_no
        }

    def critiques_of(self, target: AgentId, round_no: int) -> list[PeerReview]:
        """The critiques of ``target``'s proposal made in ``round_no``, by reviewer id."""
        out = [
            rv
            for (_, r), reviews in sorted(self.critiques.items())
            if r == round_no
            for rv in reviews
            if rv.target == target
        ]
        return out

    def rated(self) -> set[AgentId]:
        """Agents whose final rating call is recorded (answered or failed)."""
        return set(self.ratings) | {a for (a, r) in self.review_errors if r == RATING_ROUND}

    def ratings_of(self, target: AgentId) -> list[PeerReview]:
        """The final-stage peer ratings of ``target``, by reviewer id."""
        return [rv for _, rs in sorted(self.ratings.items()) for rv in rs if rv.target == target]

    # ------------------------------------------------------------------ commands

    def start(
        self,
        agents: list[AgentId] | None = None,
        *,
        seats: dict[str, dict[str, str]] | None = None,
        council_version: int = 0,
    ) -> None:
        """Mark the work handed out (to ``agents``, from the council at ``council_version``:
        ``seats`` says who sits where). Idempotent: a restarted dispatcher may call it again."""
        if self.status is not DeliberationStatus.PENDING:
            return
        chosen = list(agents) if agents is not None else self.default_agents()
        if len(chosen) != self.num_agents or len(set(chosen)) != len(chosen):
            raise InvalidDeliberationError(
                "agents", f"need {self.num_agents} distinct agent ids, got {chosen}"
            )
        self._started(agents=list(chosen), seats=dict(seats or {}), council_version=council_version)

    def receive_proposal(self, *, agent_id: AgentId, round: int, answer: AgentAnswer) -> bool:
        """Record an answer. Returns False when it came late (recorded, but changes nothing).

        Raises:
            DuplicateProposalError: this (agent, round) already has an answer.
            UnknownAgentError: the agent is not on this council, or the round is out of range.
            InvalidDeliberationError: the answer is empty.
        """
        return self._answer(self.ProposalReceived, agent_id, round, answer, "proposal")

    def revise_proposal(
        self,
        *,
        agent_id: AgentId,
        round: int,
        answer: AgentAnswer,
        addressed: list[str] | None = None,
    ) -> bool:
        """Record a revised proposal for a later round (``round`` >= 1); else as receive_proposal.

        ``addressed``: the peers whose critiques the revision was shown.
        """
        if round < 1:
            raise InvalidDeliberationError("round", f"a revision is for round >= 1, got {round}")
        return self._answer(
            self.ProposalRevised,
            agent_id,
            round,
            answer,
            "revision",
            addressed=list(addressed or []),
        )

    def _answer(
        self,
        event_class: type[Deliberation.ProposalReceived],
        agent_id: AgentId,
        round: int,
        answer: AgentAnswer,
        what: str,
        **extra: Any,
    ) -> bool:
        """The guards a proposal and a revision share, then the event (or a late one)."""
        self._require_member(agent_id, round)
        if self.is_terminal:
            self._late_proposal(
                agent_id=agent_id,
                round=round,
                content=answer.content,
                model=answer.model,
                status_at_arrival=self.status.value,
            )
            return False
        self._require_unanswered(agent_id, round)
        if not answer.content.strip():
            raise InvalidDeliberationError("content", f"empty {what} from {agent_id}")
        # Field by field, not ``dataclasses.asdict``: that recurses through the prompt (35 µs
        # against 1.4 µs for one proposal), which is replaced here anyway.
        answered = {name: getattr(answer, name) for name in _ANSWER_FIELDS}
        answered["prompt"] = [{"role": r, "content": c} for r, c in answer.prompt]
        self.trigger_event(event_class, agent_id=agent_id, round=round, **answered, **extra)
        return True

    def receive_critique(
        self,
        *,
        agent_id: AgentId,
        round: int,
        reviews: list[PeerReview],
        model: str = "",
        tokens: int = 0,
        latency_ms: int = 0,
        error: str = "",
    ) -> bool:
        """Record an agent's critiques of its peers' round ``round - 1`` proposals.

        Returns False (records nothing) when the deliberation is closed.

        Raises:
            DuplicateProposalError: this agent's critique for ``round`` is already recorded.
            UnknownAgentError: the reviewer or a target is not on the council, a review is of
                the reviewer itself, or the round is out of range.
        """
        if round < 1:
            raise InvalidDeliberationError("round", f"critiques are for round >= 1, got {round}")
        self._require_member(agent_id, round)
        if self.is_terminal:
            return False
        if agent_id in self.critiqued(round):
            msg = f"Deliberation {self.id}: {agent_id} already critiqued in round {round}"
            raise DuplicateProposalError(msg)
        self._require_reviews(agent_id, reviews)
        self._critique_received(
            agent_id=agent_id,
            round=round,
            reviews=[rv.as_dict() for rv in reviews],
            model=model,
            tokens=tokens,
            latency_ms=latency_ms,
            error=error,
        )
        return True

    def receive_ratings(
        self,
        *,
        agent_id: AgentId,
        reviews: list[PeerReview],
        model: str = "",
        tokens: int = 0,
        latency_ms: int = 0,
        error: str = "",
    ) -> bool:
        """Record an agent's ratings of its peers' final proposals (before scoring).

        Returns False when the deliberation is closed. Raises as receive_critique does.
        """
        self._require_member(agent_id, 0)
        if self.is_terminal:
            return False
        if agent_id in self.rated():
            msg = f"Deliberation {self.id}: {agent_id} already rated its peers"
            raise DuplicateProposalError(msg)
        self._require_reviews(agent_id, reviews)
        self._ratings_received(
            agent_id=agent_id,
            reviews=[rv.as_dict() for rv in reviews],
            model=model,
            tokens=tokens,
            latency_ms=latency_ms,
            error=error,
        )
        return True

    def fail_agent(self, *, agent_id: AgentId, round: int, error: str) -> bool:
        """Record that an agent could not answer. Returns False when the deliberation is closed."""
        self._require_member(agent_id, round)
        if self.is_terminal:
            return False
        self._require_unanswered(agent_id, round)
        self._agent_failed(agent_id=agent_id, round=round, error=error or "unknown error")
        return True

    def score(self, *, agent_id: AgentId, score: float, checks: list[CheckOutcome]) -> None:
        """Record the score of an agent's final proposal."""
        self._require_open()
        if agent_id not in self.final_proposals():
            raise UnknownAgentError(f"Deliberation {self.id}: {agent_id} has no proposal to score")
        if not 0.0 <= score <= 1.0:
            raise InvalidDeliberationError("score", f"{score} not in [0, 1]")
        self._scored(agent_id=agent_id, score=score, checks=[c.as_dict() for c in checks])

    def complete(self) -> None:
        """Choose the winner from the recorded scores; FAILED when no agent produced anything.

        The ranking sorts by score, then by a hash of (deliberation, content), so it does not
        depend on the order agents were numbered or answered in. In an orchestration with an
        architect, the architect's choice (or its recorded fallback) wins and leads the ranking;
        completing before that choice is recorded is refused.
        """
        self._require_open()
        if not self.final_proposals():
            reasons = "; ".join(f"{f.agent_id}: {f.error}" for f in self.failures.values())
            self._failed(reason=f"every agent failed ({reasons or 'no answers'})")
            return
        ranking = self.score_ranking()
        if self.awaits_architect:
            msg = f"Deliberation {self.id}: the architect's selection is not recorded"
            raise InvalidDeliberationError("architect", msg)
        if self.architect_winner:
            chosen = AgentId(self.architect_winner)
            ranking = [chosen, *(a for a in ranking if a != chosen)]
        self._completed(winner=ranking[0], ranking=[str(a) for a in ranking])

    def score_ranking(self) -> list[AgentId]:
        """The final proposals best score first (ties by a content hash, never agent order).

        Raises:
            InvalidDeliberationError: a final proposal is not scored yet.
        """
        final = self.final_proposals()
        unscored = [a for a, p in final.items() if p.score is None]
        if unscored:
            msg = f"Deliberation {self.id}: proposals of {unscored} are not scored"
            raise InvalidDeliberationError("scores", msg)

        def key(p: ProposalState) -> tuple[float, str]:
            digest = hashlib.sha256(f"{self.id}:{p.content}".encode()).hexdigest()
            return (-(p.score or 0.0), digest)

        return [p.agent_id for p in sorted(final.values(), key=key)]

    # ------------------------------------------------------------------ orchestration

    def orchestrate(
        self,
        *,
        architect_k: int,
        peer_review: bool = True,
        case_id: str = "",
        context_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark a new deliberation as an orchestration (before it is first saved).

        Raises:
            InvalidDeliberationError: ``architect_k`` outside 0..MAX_AGENTS, or the deliberation
                has started or is an orchestration already.
        """
        if not 0 <= architect_k <= MAX_AGENTS:
            raise InvalidDeliberationError("architect_k", f"{architect_k} not in 0..{MAX_AGENTS}")
        if self.orchestrated or self.status is not DeliberationStatus.PENDING:
            msg = f"Deliberation {self.id} is already {self.status.value} or orchestrated"
            raise InvalidDeliberationError("orchestration", msg)
        self._orchestration_requested(
            architect_k=architect_k,
            peer_review=peer_review,
            case_id=case_id,
            context_options=dict(context_options or {}),
        )

    @property
    def awaits_architect(self) -> bool:
        """An architect is to choose and has not yet (nor fallen back)."""
        return self.architect_k > 0 and not self.architect_winner and not self.is_terminal

    def architect_shortlist(self) -> list[AgentId]:
        """The candidates the architect chooses among: the top ``architect_k`` by score."""
        return self.score_ranking()[: self.architect_k]

    def select_by_architect(
        self,
        *,
        winner: str,
        rationale: str,
        architect_id: str,
        model: str = "",
        latency_ms: int = 0,
    ) -> None:
        """Record the architect's choice among the shortlist.

        Raises:
            DeliberationClosedError: the deliberation has ended.
            DuplicateProposalError: a selection (or fallback) is recorded already.
            UnknownAgentError: ``winner`` is not on the shortlist.
        """
        shortlist = self._require_selectable()
        if winner not in shortlist:
            msg = f"Deliberation {self.id}: {winner!r} is not among the candidates {shortlist}"
            raise UnknownAgentError(msg)
        self._architect_selected(
            winner=winner,
            rationale=rationale,
            candidates=[str(a) for a in shortlist],
            architect_id=architect_id,
            model=model,
            latency_ms=latency_ms,
        )

    def fall_back_to_score(self, *, reason: str, architect_id: str) -> None:
        """Record that the highest score wins because the architect gave no usable choice.

        Raises as ``select_by_architect`` does (but for the winner, which is the first).
        """
        shortlist = self._require_selectable()
        self._architect_fell_back(
            winner=str(shortlist[0]),
            reason=reason or "no reason given",
            candidates=[str(a) for a in shortlist],
            architect_id=architect_id,
        )

    def _require_selectable(self) -> list[AgentId]:
        self._require_open()
        if self.architect_k <= 0:
            msg = f"Deliberation {self.id} has no architect selection"
            raise InvalidDeliberationError("architect", msg)
        if self.architect_winner:
            raise DuplicateProposalError(f"Deliberation {self.id}: the architect chose already")
        shortlist = self.architect_shortlist()
        if not shortlist:
            raise InvalidDeliberationError("architect", f"Deliberation {self.id}: no candidates")
        return shortlist

    def time_out(self, now: datetime) -> None:
        """Close at the deadline, keeping what was received and naming who was missing."""
        self._require_open()
        if now < self.deadline:
            msg = f"Deliberation {self.id}: deadline {self.deadline.isoformat()} not reached"
            raise DeadlineNotReachedError(msg)
        received = sorted(self.final_proposals())
        agents = self.agents or self.default_agents()
        missing = [a for a in agents if a not in received]
        self._timed_out(received=[str(a) for a in received], missing=[str(a) for a in missing])

    def fail(self, reason: str) -> None:
        self._require_open()
        self._failed(reason=reason)

    def cancel(self, reason: str = "") -> None:
        self._require_open()
        self._cancelled(reason=reason)

    # ------------------------------------------------------------------ guards

    def _require_open(self) -> None:
        if self.is_terminal:
            msg = f"Deliberation {self.id} is {self.status.value}"
            raise DeliberationClosedError(msg)

    def _require_member(self, agent_id: AgentId, round_no: int) -> None:
        agents = self.agents or self.default_agents()
        if agent_id not in agents:
            raise UnknownAgentError(f"Deliberation {self.id}: {agent_id} is not on the council")
        if not 0 <= round_no < self.rounds:
            raise UnknownAgentError(
                f"Deliberation {self.id}: round {round_no} not in 0..{self.rounds - 1}"
            )

    def _require_unanswered(self, agent_id: AgentId, round_no: int) -> None:
        if (agent_id, round_no) in self.proposals or (agent_id, round_no) in self.failures:
            msg = f"Deliberation {self.id}: {agent_id} already answered round {round_no}"
            raise DuplicateProposalError(msg)

    def _require_reviews(self, reviewer: AgentId, reviews: list[PeerReview]) -> None:
        agents = self.agents or self.default_agents()
        for rv in reviews:
            if rv.reviewer != reviewer:
                msg = f"Deliberation {self.id}: review by {rv.reviewer} filed as {reviewer}'s"
                raise UnknownAgentError(msg)
            if rv.target not in agents or rv.target == reviewer:
                msg = f"Deliberation {self.id}: {reviewer} cannot review {rv.target!r}"
                raise UnknownAgentError(msg)
            if rv.score is not None and not 0.0 <= rv.score <= 1.0:
                raise InvalidDeliberationError("score", f"review score {rv.score} not in [0, 1]")

    # ------------------------------------------------------------------ mutators

    @event(Started)
    def _started(
        self, agents: list[str], seats: dict[str, dict[str, str]], council_version: int
    ) -> None:
        self.agents = [AgentId(a) for a in agents]
        self.seats = {a: dict(s) for a, s in seats.items()}
        self.council_version = council_version
        self.status = DeliberationStatus.IN_PROGRESS

    def _apply_proposal(self, e: Deliberation.ProposalReceived) -> None:
        """ProposalReceived's (and so ProposalRevised's) state change: see the event's apply."""
        if not self.agents:  # a proposal before Started (another dispatcher raced): implied start
            self.agents = self.default_agents()
        self.status = DeliberationStatus.IN_PROGRESS
        self.proposals[(AgentId(e.agent_id), e.round)] = ProposalState(
            agent_id=AgentId(e.agent_id),
            round=e.round,
            content=e.content,
            model=e.model,
            tokens=e.tokens,
            latency_ms=e.latency_ms,
            received_at=e.timestamp,
            prompt_tokens=e.prompt_tokens,
            temperature=e.temperature,
            seed=e.seed,
            persona=e.persona,
        )

    @event(CritiqueReceived)
    def _critique_received(
        self,
        agent_id: str,
        round: int,
        reviews: list[dict[str, Any]],
        model: str,
        tokens: int,
        latency_ms: int,
        error: str,
    ) -> None:
        if error:
            self.review_errors[(AgentId(agent_id), round)] = error
        else:
            self.critiques[(AgentId(agent_id), round)] = [PeerReview.from_dict(r) for r in reviews]

    @event(PeerRatingsReceived)
    def _ratings_received(
        self,
        agent_id: str,
        reviews: list[dict[str, Any]],
        model: str,
        tokens: int,
        latency_ms: int,
        error: str,
    ) -> None:
        if error:
            self.review_errors[(AgentId(agent_id), RATING_ROUND)] = error
        else:
            self.ratings[AgentId(agent_id)] = [PeerReview.from_dict(r) for r in reviews]

    @event(LateProposalReceived)
    def _late_proposal(
        self, agent_id: str, round: int, content: str, model: str, status_at_arrival: str
    ) -> None:
        self.late.append(AgentId(agent_id))

    @event(AgentFailed)
    def _agent_failed(self, agent_id: str, round: int, error: str) -> None:
        if not self.agents:
            self.agents = self.default_agents()
        self.status = DeliberationStatus.IN_PROGRESS
        self.failures[(AgentId(agent_id), round)] = FailureState(AgentId(agent_id), round, error)

    @event(ProposalScored)
    def _scored(self, agent_id: str, score: float, checks: list[dict[str, Any]]) -> None:
        proposal = self.final_proposals()[AgentId(agent_id)]
        proposal.score = score
        proposal.checks = [CheckOutcome.from_dict(c) for c in checks]

    @event(Completed)
    def _completed(self, winner: str, ranking: list[str]) -> None:
        self.status = DeliberationStatus.COMPLETED
        self.winner = AgentId(winner)
        self.ranking = [AgentId(a) for a in ranking]
        self.finished_at = self.event_time

    @event(TimedOut)
    def _timed_out(self, received: list[str], missing: list[str]) -> None:
        self.status = DeliberationStatus.TIMEOUT
        self.missing = [AgentId(a) for a in missing]
        self.finished_at = self.event_time

    @event(Failed)
    def _failed(self, reason: str) -> None:
        self.status = DeliberationStatus.FAILED
        self.reason = reason
        self.finished_at = self.event_time

    @event(OrchestrationRequested)
    def _orchestration_requested(
        self, architect_k: int, peer_review: bool, case_id: str, context_options: dict[str, Any]
    ) -> None:
        self.orchestrated = True
        self.architect_k = architect_k
        self.peer_review = peer_review
        self.case_id = case_id
        if context_options:
            self.context_options = dict(context_options)

    @event(ArchitectSelected)
    def _architect_selected(
        self,
        winner: str,
        rationale: str,
        candidates: list[str],
        architect_id: str,
        model: str,
        latency_ms: int,
    ) -> None:
        self.architect_winner = winner
        self.architect_rationale = rationale
        self.architect_id = architect_id
        self.architect_candidates = tuple(candidates)

    @event(ArchitectFellBack)
    def _architect_fell_back(
        self, winner: str, reason: str, candidates: list[str], architect_id: str
    ) -> None:
        self.architect_winner = winner
        self.architect_fallback = reason
        self.architect_id = architect_id
        self.architect_candidates = tuple(candidates)

    @event(Cancelled)
    def _cancelled(self, reason: str) -> None:
        self.status = DeliberationStatus.CANCELLED
        self.reason = reason
        self.finished_at = self.event_time


# Every class a Deliberation's state holds; a snapshot decodes only these.
_SNAPSHOT_CODEC = SnapshotCodec(
    ProposalState, FailureState, CheckOutcome, PeerReview, DeliberationStatus, Role
)
