"""Recorded check outcomes as the seed's ``CheckSuite``: its policy, lint and dry-run slots, the
rest as additional checks, and what each says when it did not run.

A part of the proto ↔ domain mapping (``_mapping``) with its own rule to keep: a check that did
not run never reads as passed on the wire, whatever an old event says.
"""

from __future__ import annotations

from aggregates import CheckOutcome
from aggregates.values import all_checks_passed
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

NOT_APPLICABLE_PREFIX = "not applicable: "
NO_EXIT_CODE = -1
"""``DryRunResult.exit_code`` when nothing ran: proto3 cannot leave an int unset, and 0 would
claim a clean exit."""


def check_suite(checks: tuple[CheckOutcome, ...] | list[CheckOutcome]) -> pb.CheckSuite:
    """The seed's CheckSuite: policy, lint and dry-run slots, the rest as additional checks.

    A check that did not run never reads as passed: a not-applicable one is listed with
    ``passed=false``, score 0 and a message saying why (``details["applicable"] = "false"``); a
    dry run that did not execute is ``passed=false`` with ``exit_code`` -1 and a message saying
    why; ``all_passed`` is true only when every applicable check ran and passed
    (``aggregates.values.all_checks_passed``). Stored events from before this rule are read the
    same way.
    """
    suite = pb.CheckSuite(all_passed=all_checks_passed(checks))
    for c in checks:
        passed = c.passed_run
        errors = [e for e in c.message.split("\n") if e] if not c.passed else []
        if c.check_type == "policy":
            suite.policy.CopyFrom(
                pb.PolicyResult(passed=passed, violations=errors, message=c.message)
            )
        elif c.check_type == "lint":
            suite.lint.CopyFrom(lint_result(c, errors))
        elif c.check_type in ("dryrun", "compile"):
            suite.dryrun.CopyFrom(_dryrun(c))
        else:
            suite.additional_checks.append(
                pb.CheckResult(
                    check_type=c.check_type,
                    passed=passed,
                    score=c.score if c.applicable else 0.0,
                    message=_said(c),
                    details=c.details,
                )
            )
    return suite


def _said(c: CheckOutcome) -> str:
    """The check's message; one that could not apply says so even in an old event's words."""
    if c.applicable or c.message.startswith(NOT_APPLICABLE_PREFIX):
        return c.message
    return NOT_APPLICABLE_PREFIX + c.message


def lint_result(c: CheckOutcome, fallback: list[str]) -> pb.LintResult:
    """The seed's LintResult from the lint check's counts and findings (ruff's, one per line)."""
    listed = [e for e in c.details.get("errors", "").split("; ") if e] or fallback
    return pb.LintResult(
        passed=c.passed_run,
        error_count=int(c.details.get("error_count", len(listed))),
        warning_count=int(c.details.get("warning_count", "0")),
        errors=listed,
    )


def _dryrun(c: CheckOutcome) -> pb.DryRunResult:
    """The real run's exit code and output tail where it ran in the sandbox (``checks``); where
    it did not run, not passed, no exit code (-1) and why (``details["executed"]``)."""
    if not c.ran:
        why = c.details.get("executed", "") or c.message
        message = c.message if c.message.startswith(why) else f"{why}; {c.message}"
        return pb.DryRunResult(passed=False, exit_code=NO_EXIT_CODE, message=message)
    code = c.details.get("exit_code", "")
    return pb.DryRunResult(
        passed=c.passed,
        output=c.details.get("output", ""),
        exit_code=int(code) if code.lstrip("-").isdigit() else (0 if c.passed else 1),
        message=c.message,
    )
