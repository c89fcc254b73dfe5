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
from aggregates.ids import deliberation_id, plan_deliberation_task_id, plan_id_of
from aggregates.plan import DEFAULT_PLAN_ROLES, Plan
from aggregates.values import (
    AgentAnswer,
    AgentId,
    CheckOutcome,
    DeliberationStatus,
    PeerReview,
    Role,
)

__all__ = [
    "DEFAULT_PLAN_ROLES",
    "AgentAnswer",
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
    "PeerReview",
    "Plan",
    "ProposalState",
    "Role",
    "UnknownAgentError",
    "deliberation_id",
    "plan_deliberation_task_id",
    "plan_id_of",
]
