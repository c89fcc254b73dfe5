"""The domain: pure, synchronous aggregates built with ``eventsourcing``. No I/O lives here."""

from aggregates.deliberation import Deliberation, FailureState, ProposalState
from aggregates.errors import (
    DeadlineNotReachedError,
    DeliberationClosedError,
    DeliberationError,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
)
from aggregates.ids import deliberation_id
from aggregates.values import AgentId, CheckOutcome, DeliberationStatus, Role

__all__ = [
    "AgentId",
    "CheckOutcome",
    "DeadlineNotReachedError",
    "Deliberation",
    "DeliberationClosedError",
    "DeliberationError",
    "DeliberationStatus",
    "DuplicateProposalError",
    "FailureState",
    "InvalidDeliberationError",
    "ProposalState",
    "Role",
    "UnknownAgentError",
    "deliberation_id",
]
