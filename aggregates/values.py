"""Small value types shared by the domain and its edges: ids, roles, statuses, check outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NewType

from aggregates.errors import InvalidDeliberationError

AgentId = NewType("AgentId", str)

MAX_AGENTS = 16
MAX_ROUNDS = 5
MAX_TASK_BYTES = 64 * 1024


class Role(str, Enum):
    DEV = "DEV"
    QA = "QA"
    ARCHITECT = "ARCHITECT"
    DEVOPS = "DEVOPS"
    DATA = "DATA"

    @classmethod
    def parse(cls, value: Role | str) -> Role:
        """Accept any case; an unknown role is an error that names the field and the choices."""
        if isinstance(value, Role):
            return value
        try:
            return cls(value.strip().upper())
        except ValueError:
            choices = ", ".join(r.value for r in cls)
            raise InvalidDeliberationError("role", f"{value!r} is not one of {choices}") from None


class DeliberationStatus(str, Enum):
    """The seed's status enum (names and order), with CANCELLED added at the end."""

    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset(
    {
        DeliberationStatus.COMPLETED,
        DeliberationStatus.FAILED,
        DeliberationStatus.TIMEOUT,
        DeliberationStatus.CANCELLED,
    }
)


APPLICABLE_KEY = "applicable"
NOT_APPLICABLE = "false"
"""``details[APPLICABLE_KEY]`` of a check that could not judge the answer (no sandbox, no peer
tests, no shell block for shellcheck, ...)."""
EXECUTED_KEY = "executed"
NOT_RUN = "not run"
"""``details[EXECUTED_KEY]`` starts with this on a check that should have executed code and did
not (the dry run without a sandbox): it says why."""


@dataclass(frozen=True)
class CheckOutcome:
    """One check on a proposal, in the seed's CheckResult shape (policy, lint, dryrun, …)."""

    check_type: str
    passed: bool
    score: float
    message: str = ""
    details: dict[str, str] = field(default_factory=dict)

    @property
    def applicable(self) -> bool:
        """Whether the check could judge the answer at all (``details["applicable"]``): one
        that could not says so and counts nowhere, neither in the score nor in "all passed"."""
        return self.details.get(APPLICABLE_KEY) != NOT_APPLICABLE

    @property
    def ran(self) -> bool:
        """Whether the check did what its name says: applicable, and (a dry run) executed.

        A dry run with no sandbox only compiles (``details["executed"]`` = "not run: <why>");
        it still ranks by what compiled, but it ran nothing, so it never reads as passed.
        """
        return self.applicable and not self.details.get(EXECUTED_KEY, "").startswith(NOT_RUN)

    @property
    def passed_run(self) -> bool:
        """Passed, and ran: what a reader may call "passed" (stored events from before this
        rule said ``passed`` for checks that did not run; this reads them truthfully too)."""
        return self.passed and self.ran

    def as_dict(self) -> dict[str, Any]:
        # Spelled out: ``dataclasses.asdict`` recurses through every value (21 µs here against
        # 1 µs), and a deliberation stores a score's checks once per candidate.
        return {
            "check_type": self.check_type,
            "passed": self.passed,
            "score": self.score,
            "message": self.message,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckOutcome:
        return cls(
            check_type=str(data["check_type"]),
            passed=bool(data["passed"]),
            score=float(data["score"]),
            message=str(data.get("message", "")),
            details={str(k): str(v) for k, v in dict(data.get("details", {})).items()},
        )


def all_checks_passed(checks: Sequence[CheckOutcome]) -> bool:
    """Every check that applies ran and passed, and at least one applies.

    A check that could not apply is left out (it judged nothing either way); a dry run that
    did not execute makes the answer false: nothing can claim a run that did not happen.
    """
    counted = [c for c in checks if c.applicable]
    return bool(counted) and all(c.passed_run for c in counted)


REVIEW_SOURCES = ("structured", "parsed", "fallback", "error")
"""How a peer review's rating was obtained: JSON that matched the schema, text a tolerant parser
read, a neutral rating because nothing usable came back, or the call itself failed."""


@dataclass(frozen=True)
class PeerReview:
    """One agent's review of a peer's proposal: a rating in [0, 1] and the critique behind it.

    ``score`` is None when the reviewer gave nothing usable (``source`` says why); a reader then
    uses the neutral rating, so a broken reviewer neither helps nor hurts anyone.
    """

    reviewer: str
    target: str
    score: float | None
    text: str = ""
    source: str = "structured"

    def as_dict(self) -> dict[str, Any]:
        return {  # spelled out, as ``CheckOutcome.as_dict``
            "reviewer": self.reviewer,
            "target": self.target,
            "score": self.score,
            "text": self.text,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PeerReview:
        raw = data.get("score")
        return cls(
            reviewer=str(data["reviewer"]),
            target=str(data["target"]),
            score=None if raw is None else float(raw),
            text=str(data.get("text", "")),
            source=str(data.get("source", "structured")),
        )


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    """What an agent answered in one round, and how: the text and its provenance, one value.

    A proposal (round 0) and a revision (later rounds) carry the same facts; passing them as one
    value keeps the dispatcher, the aggregate and the tests from spelling out the same eleven
    keywords at every call.
    """

    content: str
    model: str
    tokens: int
    """Completion tokens."""
    latency_ms: int
    prompt_tokens: int = 0
    temperature: float | None = None
    seed: int | None = None
    persona: str = ""
    thinking_retried: bool = False
    """The model spent its whole budget thinking and was asked once more with thinking off."""
    prompt: tuple[tuple[str, str], ...] = ()
    """The chat as sent, ``(role, content)`` per message (the last may be the assistant prefill
    the model continued); empty: not known. Recorded rather than rebuilt later: the prompt
    depends on the story context read at the time and on the prompt code of that release."""
    attempts: int = 0
    """HTTP requests the call took (1: no retry); 0: not known."""
