"""``fleet result`` shows what ran: each proposal's run (the acceptance tests' outcome) and the
cross-execution matrix, from the checks the scores were built on."""

from __future__ import annotations

import io
import re

from rich.console import Console

from aggregates.values import CheckOutcome
from fleet import render
from fleet.grpc._check_suite import check_suite
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def _result(agent: str, dry: CheckOutcome, cross: CheckOutcome, rank: int) -> pb.DeliberationResult:
    return pb.DeliberationResult(
        proposal=pb.Proposal(author_id=agent, content="x"),
        checks=check_suite([dry, cross]),
        score=1.0 / rank,
        rank=rank,
    )


def test_the_run_and_the_pass_matrix_are_shown() -> None:
    ran = {"mode": "sandbox", "exit_code": "0", "output": "", "gate": "true"}
    right = _result(
        "dev-agent-1",
        CheckOutcome("dryrun", True, 1.0, "acceptance 2/2 passed", ran),
        CheckOutcome("cross_exec", True, 1.0, "agreement 1.00", {"tests:dev-agent-2": "1/1"}),
        1,
    )
    wrong = _result(
        "dev-agent-2",
        CheckOutcome("dryrun", False, 0.5, "acceptance 1/2 passed; test_start: …", ran),
        CheckOutcome("cross_exec", False, 0.0, "not run: x", {"applicable": "false"}),
        2,
    )
    response = pb.GetDeliberationResultResponse(
        task_id="t", winner_id="dev-agent-1", results=[right, wrong]
    )
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render.result(console, response)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "acceptance 2/2 passed" in out and "acceptance 1/2 passed" in out
    assert "cross_exec✓" in out and "cross_exec–" in out  # – : could not apply
    assert "Cross-execution" in out
    [row] = [line for line in out.splitlines() if re.search(r"dev-agent-1\W+2/2", line)]
    assert re.search(r"2/2\W+·\W+1/1", row), row
    assert "run✓" in out and "run✗" in out  # the dry run ran, it did not just compile
    assert wrong.checks.dryrun.exit_code == 0 and not wrong.checks.dryrun.passed  # the real code
