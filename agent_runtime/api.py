"""The agent runtime's interface: what a dispatcher may know about running agents.

Dispatchers import this module only (never Ray): one ``*Input`` object per call, so adding a field
breaks no signature (Temporal's interceptor style). ``RayAgentRuntime`` is the production
implementation; tests may use fakes that satisfy the same Protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aggregates.values import CheckOutcome, PeerReview


@dataclass(frozen=True)
class Sampling:
    """How one agent samples: recorded so a run can be repeated and diversity is visible."""

    model: str = ""
    temperature: float = 0.7
    seed: int | None = None
    persona: str = ""
    max_tokens: int = 384
    endpoint: str = ""
    """The OpenAI-compatible URL this agent calls (its council seat's); empty: the runtime's."""


@dataclass(frozen=True)
class PeerProposal:
    agent_id: str
    content: str


@dataclass(frozen=True)
class AgentTurn:
    """One agent's work for one round of one deliberation."""

    deliberation_id: str
    agent_id: str
    role: str
    round: int
    task: str
    rubric: str = ""
    requirements: tuple[str, ...] = ()
    peers: tuple[PeerProposal, ...] = ()
    """Peers' latest proposals (rounds after the first): the agent critiques and revises."""
    own_previous: str = ""
    sampling: Sampling = field(default_factory=Sampling)
    timeout_s: float = 120.0
    critiques: tuple[str, ...] = ()
    """What peers said about this agent's previous proposal (revise rounds)."""
    context: str = ""
    """What surrounds the task when it belongs to a story (its plan, the decisions other roles
    took, its phase), built by the dispatcher (``application.task_context``); "" when none."""
    rate_after: tuple[str, ...] = ()
    """Set by a caller that, once these agents (this one among them) have all answered this
    round, will ask each of them for ``final_rating`` of the others' answers: a runtime that
    holds all their answers may start those calls early (``_early_ratings``). Empty: no
    promise."""

    @property
    def kind(self) -> str:
        """ "propose" (round 0, or nothing to revise against) or "revise"."""
        return "revise" if self.round > 0 and self.peers else "propose"

    @property
    def key(self) -> str:
        """Deterministic id of this piece of work: a redelivery has the same key."""
        return f"{self.deliberation_id}:{self.round}:{self.agent_id}"


REVIEW_PURPOSES = ("critique", "rate", "select")
"""``select``: an architect chooses the winner among candidates
(``agent_runtime.member.architect``)."""


@dataclass(frozen=True)
class ReviewInput:
    """One agent reviews its peers' proposals: critiques them before a revise round
    (``purpose="critique"``) or rates the final ones for scoring (``purpose="rate"``); or an
    ARCHITECT agent chooses the winner among the top candidates (``purpose="select"``, ``role``
    ARCHITECT: see ``agent_runtime.member.architect``)."""

    deliberation_id: str
    agent_id: str
    role: str
    round: int
    """The revise round the critique is for; the last round for a final rating."""
    purpose: str
    task: str
    rubric: str = ""
    requirements: tuple[str, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    """The peers' proposals (never the reviewer's own)."""
    sampling: Sampling = field(default_factory=Sampling)
    timeout_s: float = 120.0

    @property
    def key(self) -> str:
        return f"{self.deliberation_id}:{self.purpose}:{self.round}:{self.agent_id}"


@dataclass(frozen=True)
class ReviewResult:
    agent_id: str
    reviews: tuple[PeerReview, ...]
    """One per candidate, in the candidates' order; ``score`` None where nothing usable came."""
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int


@dataclass(frozen=True)
class TurnResult:
    agent_id: str
    round: int
    content: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    thinking_retried: bool = False
    """The model spent its whole budget thinking and this answer came from a second request
    with thinking off (``FLEET_LLM_THINKING=auto``): recorded, since it cost a second call."""
    prompt: tuple[tuple[str, str], ...] = ()
    """The chat as sent, ``(role, content)`` per message, the assistant prefill last: recorded
    with the answer (``ProposalReceived.prompt``) so a reader sees what the model was asked."""
    attempts: int = 0
    """HTTP requests the call took (1: no retry); 0: not known."""


@dataclass(frozen=True)
class Candidate:
    agent_id: str
    content: str
    peer_reviews: tuple[PeerReview, ...] = ()
    """Peers' ratings of this proposal (scoring only)."""


@dataclass(frozen=True)
class AssessmentInput:
    """Score the final proposals of one deliberation."""

    deliberation_id: str
    role: str
    task: str
    rubric: str
    requirements: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    peer_review: bool = False
    """Peers rated the candidates: the score then weighs their ratings (see ``checks.scoring``)."""
    check_weights: Mapping[str, float] = field(default_factory=dict)
    """The council's role checks and their weights (``role_checks``); empty: all, weight 1."""
    metadata: Mapping[str, str] = field(default_factory=dict)
    """The task's metadata, for the checks that read it (``sql_dialect``, ``sql_schema``)."""
    acceptance_tests: str = ""
    """The task's acceptance tests (pytest-style Python; ``TaskConstraints.metadata
    ["acceptance_tests"]``): every DEV candidate runs against them in the sandbox, and they gate
    its score. Peers' tests need no field: they are in the candidates' own text."""


@dataclass(frozen=True)
class Assessment:
    agent_id: str
    score: float
    """In [0, 1]; higher is better."""
    checks: tuple[CheckOutcome, ...]


class AgentRuntimeError(Exception):
    """Root of the runtime's errors."""


class AgentTurnError(AgentRuntimeError):
    """An agent could not produce an answer; the message says why (recorded as AgentFailed)."""


class TurnRunner(Protocol):
    """What asks one agent for one answer: the runtime itself, or, in a process without agents,
    a client of one that has them (``agent_runtime.nats_backend.turns``)."""

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        """Run one agent turn. Raises AgentTurnError (never returns fabricated content)."""
        ...


class AgentRuntime(Protocol):
    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        """Run one agent turn. Raises AgentTurnError (never returns fabricated content)."""
        ...

    async def review(self, request: ReviewInput) -> ReviewResult:
        """One agent critiques or rates its peers' proposals (structured output where the
        server supports it, a tolerant parser where not). Raises AgentTurnError when the call
        fails; an unusable answer is not an error: its reviews carry ``score=None``."""
        ...

    def precheck(self, request: AssessmentInput) -> None:
        """A hint, given as soon as the final proposals are known and before the peers have
        rated them: start their executable checks now, so that ``assess`` finds them done.
        ``assess`` must give the same answer whether or not this was called."""
        ...

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        """Score candidates: executable checks where the role allows, one Assessment each."""
        ...

    async def close(self) -> None: ...


def final_rating(turn: AgentTurn, proposals: Mapping[str, str]) -> ReviewInput:
    """The final rating ``turn``'s agent is asked for when ``proposals`` (agent → its answer,
    its own included) are the final ones: the others', in agent order, with the turn's task,
    rubric, requirements, sampling and timeout. The dispatcher asks exactly this (see
    ``AgentTurn.rate_after``)."""
    return ReviewInput(
        deliberation_id=turn.deliberation_id,
        agent_id=turn.agent_id,
        role=turn.role,
        round=turn.round,
        purpose="rate",
        task=turn.task,
        rubric=turn.rubric,
        requirements=turn.requirements,
        candidates=tuple(
            Candidate(a, c) for a, c in sorted(proposals.items()) if a != turn.agent_id
        ),
        sampling=turn.sampling,
        timeout_s=turn.timeout_s,
    )
