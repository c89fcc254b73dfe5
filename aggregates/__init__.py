"""The domain: pure, synchronous aggregates built with ``eventsourcing``. No I/O lives here."""

from aggregates.council import Council, CouncilSettings, Member
from aggregates.deliberation import Deliberation, FailureState, ProposalState
from aggregates.errors import (
    CouncilStateError,
    DeadlineNotReachedError,
    DeliberationClosedError,
    DeliberationError,
    DuplicateProposalError,
    InvalidDeliberationError,
    UnknownAgentError,
)
from aggregates.ids import council_id, deliberation_id, plan_deliberation_task_id, plan_id_of
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
    "Council",
    "CouncilSettings",
    "CouncilStateError",
    "DeadlineNotReachedError",
    "Deliberation",
    "DeliberationClosedError",
    "DeliberationError",
    "DeliberationStatus",
    "DuplicateProposalError",
    "FailureState",
    "InvalidDeliberationError",
    "Member",
    "PeerReview",
    "Plan",
    "ProposalState",
    "Role",
    "UnknownAgentError",
    "council_id",
    "deliberation_id",
    "plan_deliberation_task_id",
    "plan_id_of",
]
