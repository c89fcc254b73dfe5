"""A seed client reads ruff's findings in LintResult and the role checks in additional_checks."""

from __future__ import annotations

import io

from rich.console import Console

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.scoring import assess_candidates
from aggregates import CheckOutcome
from fleet import render
from fleet.grpc._check_suite import check_suite
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def suite_of(role: str, answer: str) -> pb.CheckSuite:
    [a] = assess_candidates(AssessmentInput("d", role, "t", "", (), (Candidate("a", answer),)))
    return check_suite(a.checks)


def test_lint_result_carries_rufs_counts_and_findings() -> None:
    answer = "```python\nimport os\n\ndef f(x):\n    return x + y + z\n```"
    lint = suite_of("DEV", answer).lint
    assert (lint.passed, lint.error_count, lint.warning_count) == (False, 2, 1)
    assert list(lint.errors) == [
        "line 4: F821 Undefined name `y`",
        "line 4: F821 Undefined name `z`",
    ]


def test_role_checks_travel_as_additional_checks_with_their_details() -> None:
    answer = "```bash\ncd $1\n```\n"
    suite = suite_of("DEVOPS", answer)
    extra = {c.check_type: c for c in suite.additional_checks}
    assert not extra["shellcheck"].passed and "SC2164" in extra["shellcheck"].message
    assert extra["shellcheck"].details["weight"] == "1"
    hadolint = extra["hadolint"]  # could not judge: says so, and does not pass
    assert not hadolint.passed and hadolint.score == 0.0
    assert hadolint.message.startswith("not applicable")
    assert not suite.all_passed


def test_with_no_sandbox_the_dry_run_is_not_passed_and_claims_no_exit_code() -> None:
    answer = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    suite = suite_of("DEV", answer)  # assess_candidates without a sandbox: nothing runs
    assert suite.policy.passed and suite.lint.passed
    assert not suite.dryrun.passed and suite.dryrun.exit_code == -1
    assert suite.dryrun.message.startswith("not run: ") and "compile" in suite.dryrun.message
    cross = {c.check_type: c for c in suite.additional_checks}["cross_exec"]
    assert not cross.passed and cross.message.startswith("not applicable: not run")
    assert not suite.all_passed


def test_events_stored_before_the_rule_are_read_truthfully() -> None:
    """Older events said ``passed`` for checks that did not run; they are read as not run."""
    old = [
        CheckOutcome("policy", True, 1.0, "ok"),
        CheckOutcome("dryrun", True, 1.0, "all blocks compile",
                     {"mode": "compile", "exit_code": "0", "executed": "not run: off"}),
        CheckOutcome("cross_exec", True, 1.0, "not applicable: not run: off",
                     {"applicable": "false"}),
    ]  # fmt: skip
    suite = check_suite(old)
    assert not suite.dryrun.passed and suite.dryrun.exit_code == -1
    assert suite.dryrun.message == "not run: off; all blocks compile"
    [cross] = suite.additional_checks
    assert not cross.passed and cross.score == 0.0
    assert not suite.all_passed
    assert check_suite(old[:1]).all_passed  # what ran and passed still says so


def test_fleet_result_marks_the_checks_that_could_not_judge_apart_from_pass_and_fail() -> None:
    suite = suite_of("DEVOPS", "```bash\ncd $1\n```\n")
    response = pb.GetDeliberationResultResponse(
        task_id="t", winner_id="devops-agent-1",
        results=[pb.DeliberationResult(
            proposal=pb.Proposal(author_id="devops-agent-1", content="x"), checks=suite, rank=1
        )],
    )  # fmt: skip
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render.result(console, response)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "policy✓ shellcheck✗" in out
    assert "hadolint–" in out and "yamllint–" in out  # could not apply: shown, not counted
