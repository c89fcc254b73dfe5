"""Checks that judge each role's kind of answer with the field's own tools.

``role_checks(role, answer, config)`` returns one ``CheckOutcome`` per check the role runs
(``names.CHECKS_BY_ROLE``, or the council's configured subset), each with its weight in its
details; a check that finds nothing of its kind in the answer says "not applicable: <reason>"
and does not count. Pure functions of the text, the role and the configuration: the linters
(ruff, shellcheck, hadolint) read the text on stdin; nothing the model wrote is executed.

Scoring is ``scoring.score``'s: each applicable role check joins the rank with its council
weight (a role check marked ``gate`` also gates). See ``docs/checks.md``, ``docs/role-checks.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from agent_runtime.checks.role_checks._outcomes import (
    findings,
    is_applicable,
    not_applicable,
    weighted,
)
from agent_runtime.checks.role_checks._tools import ToolUnavailableError
from agent_runtime.checks.role_checks.architect import (
    decisions_check,
    diagrams_check,
    sections_check,
)
from agent_runtime.checks.role_checks.blocks import blocks_of
from agent_runtime.checks.role_checks.data import sql_check
from agent_runtime.checks.role_checks.devops import (
    Prelinted,
    hadolint_check,
    k8s_schema_check,
    prelint,
    shellcheck_check,
    yamllint_check,
)
from agent_runtime.checks.role_checks.names import CHECKS_BY_ROLE, unknown_checks
from agent_runtime.checks.role_checks.python_lint import ruff_lint, ruff_lint_many
from agent_runtime.checks.role_checks.qa import qa_tests_check
from aggregates.values import CheckOutcome

__all__ = [
    "CHECKS_BY_ROLE",
    "Check",
    "RoleCheckConfig",
    "ToolUnavailableError",
    "ahead",
    "is_applicable",
    "role_checks",
    "ruff_lint",
    "ruff_lint_many",
    "unknown_checks",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoleCheckConfig:
    """What the council and the task say about the role checks of one deliberation."""

    weights: Mapping[str, float] = field(default_factory=dict)
    """Check name → weight. Empty: every check of the role, weight 1. Otherwise only the
    named checks run (a weight of 0 runs it for the record without counting)."""
    metadata: Mapping[str, str] = field(default_factory=dict)
    """The task's metadata (``sql_dialect``, ``sql_schema``)."""
    prelinted: Prelinted = field(default_factory=dict)
    """Findings of the linter binaries, found for all of a deliberation's answers at once
    (``ahead``); a block not in it is linted on its own."""


def _python_lint(answer: str) -> CheckOutcome:
    blocks = blocks_of(answer, "python")
    if not blocks:
        return not_applicable("ruff", "no Python block")
    try:
        report = ruff_lint("\n\n".join(blocks))
    except ToolUnavailableError as e:
        return not_applicable("ruff", str(e))
    return findings("ruff", report.errors, report.warnings, subject="Python")


Check = Callable[[str, RoleCheckConfig], CheckOutcome]
"""A role check: (the answer, the configuration) → its outcome."""

_CHECKS: Mapping[str, Check] = {
    "test_structure": lambda a, _c: qa_tests_check(a),
    "sections": lambda a, _c: sections_check(a),
    "decisions": lambda a, _c: decisions_check(a),
    "diagrams": lambda a, _c: diagrams_check(a),
    "shellcheck": lambda a, c: shellcheck_check(a, c.prelinted),
    "hadolint": lambda a, c: hadolint_check(a, c.prelinted),
    "yamllint": lambda a, _c: yamllint_check(a),
    "k8s_schema": lambda a, _c: k8s_schema_check(a),
    "sql": lambda a, c: sql_check(a, c.metadata),
    "ruff": lambda a, _c: _python_lint(a),
}


def ahead(role: str, answers: Sequence[str], config: RoleCheckConfig) -> RoleCheckConfig:
    """``config`` with the findings of the role's linter binaries (shellcheck, hadolint) for
    every one of ``answers`` (a deliberation's candidates), one run per tool rather than one
    per block: what ``role_checks`` then reads for each answer."""
    names = _names(role, config, _CHECKS)
    tools = [n for n in ("shellcheck", "hadolint") if n in names]
    if not tools:
        return config
    return replace(config, prelinted=prelint(answers, tools))


def _names(role: str, config: RoleCheckConfig, table: Mapping[str, Check]) -> list[str]:
    names = [n for n in CHECKS_BY_ROLE.get(role.upper(), ()) if n in table]
    if config.weights:
        names = [n for n in names if n in config.weights]
    return names


def role_checks(
    role: str, answer: str, config: RoleCheckConfig, runners: Mapping[str, Check] | None = None
) -> list[CheckOutcome]:
    """The role's checks on ``answer``, in ``CHECKS_BY_ROLE`` order, each with its weight.

    ``runners`` supplies the checks that need more than the text (QA's ``test_run`` needs a
    sandbox, which this package does not open); a named check without one is left out."""
    table = {**_CHECKS, **(runners or {})}
    names = _names(role, config, table)
    return [weighted(_guarded(n, answer, config, table), config.weights.get(n, 1.0)) for n in names]


def _guarded(
    name: str, answer: str, config: RoleCheckConfig, table: Mapping[str, Check]
) -> CheckOutcome:
    """A check that fails on input its tool cannot take (a bug of ours or of the tool, never
    the answer's fault) is reported as not applicable, with the error, and scoring goes on."""
    try:
        return table[name](answer, config)
    except Exception as e:
        log.warning("role check %s failed", name, exc_info=True)
        return not_applicable(name, f"the check failed: {type(e).__name__}: {e}"[:300])
