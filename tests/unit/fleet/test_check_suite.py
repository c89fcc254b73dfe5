"""A seed client reads ruff's findings in LintResult and the role checks in additional_checks."""

from __future__ import annotations

import io

from rich.console import Console

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks import assess_candidates
from fleet import render
from fleet.grpc._mapping import check_suite
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
    assert extra["hadolint"].passed and extra["hadolint"].message.startswith("not applicable")
    assert not suite.all_passed


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
