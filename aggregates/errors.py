"""The domain's one error root, and the errors a caller can act on. Messages carry the ids."""

from __future__ import annotations


class DeliberationError(Exception):
    """Root of every error the aggregates raise."""


class InvalidDeliberationError(DeliberationError, ValueError):
    """A request or command argument is invalid; ``field`` names it (for INVALID_ARGUMENT)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class DeliberationClosedError(DeliberationError):
    """The deliberation is in a terminal state."""


class DuplicateProposalError(DeliberationError):
    """This (agent, round) already has an answer; a redelivered result must not count twice."""


class UnknownAgentError(DeliberationError):
    """The agent is not on the council, or the round is out of range."""


class DeadlineNotReachedError(DeliberationError):
    """A timeout was asked for before the recorded deadline."""


class CouncilStateError(DeliberationError):
    """A council command that the council's current state refuses (for FAILED_PRECONDITION): the
    council is missing or deleted, exists already, or would be left empty. ``field`` names the
    request field the caller should look at."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
