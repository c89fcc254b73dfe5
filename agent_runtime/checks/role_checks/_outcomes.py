"""How a role check reports: the seed's CheckResult shape with a weight and an applicability flag.

Every role check returns a ``CheckOutcome`` whose ``details`` carry ``weight`` (what the council
configured, default 1) and, when the check could not judge this answer (nothing of its kind in
it), ``applicable = "false"`` (``agent_runtime.checks.applicability``, the one convention). The
score reads both from the outcome itself, so an assessment carries everything that made its
score, and folding in peer ratings later needs no config.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_runtime.checks.applicability import NOT_APPLICABLE, is_applicable, not_applicable
from aggregates.values import CheckOutcome

__all__ = [
    "NOT_APPLICABLE",
    "findings",
    "is_applicable",
    "lint_score",
    "not_applicable",
    "weighted",
]


def lint_score(errors: int, warnings: int) -> float:
    """One error halves the score, each warning costs 0.05: the lint formula of ``scoring``."""
    return round(max(0.0, 1.0 / (1 + errors) - 0.05 * warnings), 4)


def findings(
    name: str,
    errors: Sequence[str],
    warnings: Sequence[str],
    *,
    subject: str,
    extra: dict[str, str] | None = None,
) -> CheckOutcome:
    """A lint-like outcome: passes without errors; score from the counts (``lint_score``)."""
    details = {"error_count": str(len(errors)), "warning_count": str(len(warnings))}
    if errors:
        details["errors"] = "; ".join(errors)
    if warnings:
        details["warnings"] = "; ".join(warnings)
    details |= extra or {}
    message = errors[0] if errors else f"{subject} clean ({len(warnings)} warnings)"
    return CheckOutcome(name, not errors, lint_score(len(errors), len(warnings)), message, details)


def weighted(outcome: CheckOutcome, weight: float) -> CheckOutcome:
    """``outcome`` with its configured weight recorded in its details."""
    details = outcome.details | {"weight": f"{weight:g}"}
    return CheckOutcome(outcome.check_type, outcome.passed, outcome.score, outcome.message, details)
