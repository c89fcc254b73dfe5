"""Score every case of the corpus and count how often the right candidate ranks first.

``checks`` scores with the checks alone (policy, compile, ruff, and the role checks): no
sandbox, nothing runs. ``tests`` gives scoring a sandbox (``open_sandbox``) and the task's
acceptance tests, so DEV candidates run against them and against each other's tests
(cross-execution); where no sandbox can start here, that mode is reported as not available,
with the reason, never faked.

A case counts as *right* only when the right candidate's score is strictly the highest; a tie
at the top is reported apart, since the deliberation would then fall back to its tie-break.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.checks.sandbox import Sandbox, open_sandbox
from agent_runtime.checks.scoring import assess_candidates
from bench.selection.corpus import SelectionCase

MODES = ("checks", "tests")
OUTCOMES = ("right", "tie", "wrong")


@cache
def sandbox() -> Sandbox:
    """This process's sandbox, as a council member opens it (probed once)."""
    return open_sandbox("auto")


def supports_tests() -> str:
    """Why the ``tests`` mode cannot run here ("" when it can: a sandbox starts)."""
    box = sandbox()
    return "" if box.available else box.reason


@dataclass(frozen=True)
class CaseResult:
    case: SelectionCase
    mode: str
    scores: tuple[float, ...]
    seconds: float
    """Wall time of scoring the whole case (all its candidates)."""

    @property
    def outcome(self) -> str:
        top = max(self.scores)
        if self.scores[self.case.right_index] < top:
            return "wrong"
        return "tie" if self.scores.count(top) > 1 else "right"


def request_for(case: SelectionCase, mode: str) -> AssessmentInput:
    return AssessmentInput(
        deliberation_id=f"selection-{case.task_id}",
        role=case.role,
        task=case.task,
        rubric="",
        requirements=(),
        candidates=tuple(Candidate(f"candidate-{i}", c) for i, c in enumerate(case.candidates)),
        metadata={k: v for k, v in case.metadata.items() if k != "expect"},
        acceptance_tests=case.acceptance_tests if mode == "tests" else "",
    )


def score_case(case: SelectionCase, mode: str) -> CaseResult:
    request = request_for(case, mode)
    started = time.perf_counter()
    assessments: list[Assessment] = assess_candidates(
        request, sandbox() if mode == "tests" else None
    )
    seconds = time.perf_counter() - started
    return CaseResult(case, mode, tuple(a.score for a in assessments), seconds)


@dataclass(frozen=True)
class Row:
    label: str
    cases: int
    right: int
    ties: int
    wrong: int

    @property
    def accuracy(self) -> float:
        return 100.0 * self.right / self.cases if self.cases else 0.0


def rows(results: Sequence[CaseResult]) -> list[Row]:
    """One row per role, in first-seen order, then ``tested`` (the cases that have acceptance
    tests: the ones only a run can settle), then ``all``."""
    roles = list(dict.fromkeys(r.case.role for r in results))
    out = [_row(role, [r for r in results if r.case.role == role]) for role in roles]
    tested = [r for r in results if r.case.acceptance_tests.strip()]
    return [*out, *([_row("tested", tested)] if tested else []), _row("all", results)]


def _row(label: str, results: Iterable[CaseResult]) -> Row:
    outcomes = [r.outcome for r in results]
    return Row(
        label,
        len(outcomes),
        outcomes.count("right"),
        outcomes.count("tie"),
        outcomes.count("wrong"),
    )


def per_candidate_ms(results: Sequence[CaseResult]) -> tuple[float, float]:
    """(p50, p99) of the scoring time per candidate, in milliseconds."""
    samples = sorted(1000 * r.seconds / len(r.case.candidates) for r in results)
    if not samples:
        return 0.0, 0.0
    p99 = samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))]
    return statistics.median(samples), p99


def table(mode: str, results: Sequence[CaseResult]) -> str:
    head = f"{'role':<8} {'cases':>5} {'right first':>11} {'accuracy':>9} {'ties':>5} {'wrong':>5}"
    lines = [f"selection accuracy, {mode}", head]
    for r in rows(results):
        lines.append(
            f"{r.label:<8} {r.cases:>5} {r.right:>11} {r.accuracy:>8.1f}% {r.ties:>5} {r.wrong:>5}"
        )
    p50, p99 = per_candidate_ms(results)
    lines.append(f"scoring per candidate: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    if mode == "tests":
        lines.append("(the sandbox's own cost per candidate: python -m bench.sandbox_bench)")
    return "\n".join(lines)
