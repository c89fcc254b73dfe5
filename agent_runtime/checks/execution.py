"""Running candidates against tests in the sandbox: the acceptance tests and each other's (CodeT).

A DEV candidate's Python blocks split in two: blocks that define a top-level ``def test_…`` are
its *tests*, the others (in order, joined) are its *solution*, importable in the sandbox as the
module ``solution``. One sandbox run per candidate imports its solution and runs every suite
against it: the task's acceptance tests (suite ``acceptance``) and every peer's tests (one suite
per peer, never the candidate's own). The runner (``_test_runner``) reports each test's outcome,
so the result is a pass matrix: candidate × test.

Cross-execution agreement (CodeT, Chen et al. 2022, simplified to a weighted pass rate): a peer's
test ``t`` weighs ``w(t)`` = the fraction of candidates that pass it, so a test that no candidate
passes (likely a wrong test) counts for nothing, and one that all pass separates nobody; a
candidate's agreement is ``Σ w(t)·pass(c, t) / Σ w(t)`` over its peers' tests.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from agent_runtime.checks.applicability import not_applicable
from agent_runtime.checks.runner_files import RUNNER, RUNNER_NAME, SHIM, SHIM_NAME
from agent_runtime.checks.sandbox import Sandbox, SandboxLimits, SandboxRun
from aggregates.values import CheckOutcome

__all__ = [
    "ACCEPTANCE",
    "CandidateRun",
    "SuiteResult",
    "agreement",
    "cross_outcome",
    "dryrun_outcome",
    "execution_checks",
    "is_tests_block",
    "run_candidate",
    "split_code",
    "suite_name",
]

ACCEPTANCE = "acceptance"
"""The suite name of the task's acceptance tests (a peer's suite is named after the peer)."""

_TEST_DEF = re.compile(r"^(?:async\s+)?def\s+test_?\w*\s*\(", re.MULTILINE)
_SAFE = re.compile(r"[^A-Za-z0-9_]")


def is_tests_block(code: str) -> bool:
    """A block of tests: it defines a top-level ``test`` function (``def test_…(``)."""
    return _TEST_DEF.search(code) is not None


def suite_name(author: str) -> str:
    """The file-safe name of ``author``'s suite (``agent-dev-2`` → ``agent_dev_2``)."""
    return _SAFE.sub("_", author) or "unnamed"


@dataclass(frozen=True)
class SuiteResult:
    """One suite's outcome against one candidate."""

    error: str = ""
    """Why the suite did not run at all ("" when its tests ran)."""
    tests: Mapping[str, str] = field(default_factory=dict)
    """Test name → "" (passed) or why it failed."""

    @property
    def passed(self) -> int:
        return sum(1 for why in self.tests.values() if not why)

    @property
    def failed(self) -> int:
        return len(self.tests) - self.passed

    def failures(self, limit: int = 3) -> str:
        """The first failing tests and why, for a check's details."""
        bad = [f"{t}: {why}" for t, why in self.tests.items() if why]
        return "; ".join(bad[:limit]) + (f"; … {len(bad) - limit} more" if len(bad) > limit else "")


@dataclass(frozen=True)
class CandidateRun:
    """One candidate's sandbox run against every suite."""

    run: SandboxRun
    reported: bool
    """The runner printed its results (False: the run was killed, or crashed before)."""
    import_error: str
    suites: Mapping[str, SuiteResult]
    """Suite name → its outcome (empty when not ``reported``)."""

    @property
    def why_not(self) -> str:
        """Why no test result came back ("" when the runner reported)."""
        if self.reported:
            return ""
        if self.run.reason:
            return self.run.reason
        last = self.run.output.strip().splitlines()[-1:] or [f"exit code {self.run.exit_code}"]
        return f"no results ({last[0][:200]})"


def run_candidate(
    sandbox: Sandbox,
    solution: str,
    suites: Mapping[str, str],
    limits: SandboxLimits,
) -> CandidateRun:
    """Import ``solution`` as ``solution`` and run each of ``suites`` (name → code) against it."""
    nonce = secrets.token_hex(8)
    files = {"solution.py": solution, RUNNER_NAME: RUNNER, SHIM_NAME: SHIM}
    files |= {f"suites/{name}.py": code for name, code in suites.items()}
    run = sandbox.run(files, ["python3", "-I", "-S", RUNNER_NAME, nonce], limits)
    marker = f"@@fleet-results {nonce} "
    at = run.output.rfind(marker)
    if at < 0 or run.reason:
        return CandidateRun(run, False, "", {})
    try:
        raw = json.loads(run.output[at + len(marker) :].splitlines()[0])
        suites_out = {
            str(n): SuiteResult(
                str(s.get("error", "")), {str(t): str(w) for t, w in s["tests"].items()}
            )
            for n, s in dict(raw["suites"]).items()
        }
        import_error = str(raw.get("import_error", ""))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return CandidateRun(run, False, "", {})
    output = run.output[:at].rstrip()
    clean = SandboxRun(run.exit_code, output, run.timed_out, run.reason, run.duration_s)
    return CandidateRun(clean, True, import_error, suites_out)


def agreement(
    runs: Mapping[str, CandidateRun], authors: Mapping[str, str]
) -> dict[str, tuple[float | None, dict[str, str]]]:
    """Each candidate's cross-execution agreement and its row of the pass matrix.

    Args:
        runs: agent → its run (agents whose run reported only count towards the weights).
        authors: suite name → the agent who wrote it (peers' suites only).

    Returns:
        agent → (agreement in [0, 1], or None where no peer test carries weight; the row:
        peer agent → "passed/total").
    """
    reported = {a: r for a, r in runs.items() if r.reported}
    n = len(reported) or 1
    weight: dict[tuple[str, str], float] = {}
    for suite in authors:
        tests: set[str] = set()
        for r in reported.values():
            tests |= set(r.suites.get(suite, SuiteResult()).tests)
        for t in tests:
            passing = sum(1 for r in reported.values() if _passed(r, suite, t))
            weight[(suite, t)] = passing / n
    out: dict[str, tuple[float | None, dict[str, str]]] = {}
    for agent, r in runs.items():
        row: dict[str, str] = {}
        num = den = 0.0
        for suite, author in sorted(authors.items(), key=lambda kv: kv[1]):
            if author == agent:
                continue
            result = r.suites.get(suite, SuiteResult())
            total = sum(1 for (s, _t) in weight if s == suite)
            row[author] = f"{result.passed}/{total}" if r.reported else "-"
            for (s, t), w in weight.items():
                if s != suite:
                    continue
                den += w
                num += w if _passed(r, suite, t) else 0.0
        out[agent] = (num / den if den > 0 else None, row)
    return out


def _tests(suite: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    return {str(t): str(why) for t, why in suite["tests"].items()}


def _passed(run: CandidateRun, suite: str, test: str) -> bool:
    return run.suites.get(suite, SuiteResult()).tests.get(test) == ""


def split_code(blocks: Sequence[str]) -> tuple[str, str]:
    """(the solution, the tests) of a candidate's Python blocks, each joined in order.

    A candidate's tests are its top-level ``def test_…`` functions, in a block of their own or
    after the code in the same block (a server that stops at the first closing fence leaves one
    block); a block's ``import pytest`` and ``from solution import …`` lines go with them.
    Everything else is the solution. A block that does not parse stays whole in the solution
    (where its import fails, as it should).
    """
    solution: list[str] = []
    tests: list[str] = []
    for block in blocks:
        if not is_tests_block(block):
            solution.append(block)
            continue
        try:
            tree = ast.parse(block)
        except (SyntaxError, ValueError, RecursionError):
            solution.append(block)
            continue
        lines = block.splitlines()
        mine: list[str] = []
        rest: list[str] = []
        for node in tree.body:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(lines[first - 1 : node.end_lineno])
            (mine if _is_test_part(node) else rest).append(text)
        tests.append("\n".join(mine))
        if any(r.strip() for r in rest):
            solution.append("\n".join(rest))
    return "\n\n".join(solution), "\n\n".join(tests)


def _is_test_part(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name.startswith("test")
    if isinstance(node, ast.Import):
        return all(a.name == "pytest" for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.module in ("solution", "pytest")
    return False


# ----------------------------------------------------------------------------- as checks


OUTPUT_CHARS = 2000
"""Output tail kept in a check's details (the event records it: keep it small)."""


def dryrun_outcome(run: CandidateRun, *, acceptance: bool) -> CheckOutcome:
    """The real run as the seed's DryRun: the acceptance tests when the task has them (then it
    gates: ``details["gate"]``), else the import of the solution."""
    details = {
        "mode": "sandbox",
        "exit_code": str(run.run.exit_code),
        "output": run.run.output[-OUTPUT_CHARS:],
        "acceptance": "true" if acceptance else "false",
        "gate": "true" if acceptance else "false",
    }
    if not run.reported:
        details["reason"] = run.why_not
        return CheckOutcome("dryrun", False, 0.0, f"run failed: {run.why_not}", details)
    if run.import_error:
        details["reason"] = run.import_error
        return CheckOutcome("dryrun", False, 0.0, f"import failed: {run.import_error}", details)
    if not acceptance:
        return CheckOutcome("dryrun", True, 1.0, "solution imports and runs", details)
    suite = run.suites.get(ACCEPTANCE, SuiteResult(error="no acceptance results"))
    details |= {"passed": str(suite.passed), "failed": str(suite.failed)}
    if suite.error or not suite.tests:
        why = suite.error or "the acceptance tests define no test function"
        details["reason"] = why
        return CheckOutcome("dryrun", False, 0.0, f"acceptance tests: {why}", details)
    if suite.failed:
        details["failures"] = suite.failures()
    total = suite.passed + suite.failed
    message = f"acceptance {suite.passed}/{total} passed" + (
        f"; {suite.failures(1)}" if suite.failed else ""
    )
    fraction = round(suite.passed / total, 4)
    return CheckOutcome("dryrun", not suite.failed, fraction, message, details)


def cross_outcome(score: float | None, row: Mapping[str, str], own_tests: bool) -> CheckOutcome:
    """One candidate's row of the pass matrix, scored by agreement (module docstring)."""
    details = {f"tests:{peer}": cell for peer, cell in row.items()}
    details["wrote_tests"] = "true" if own_tests else "false"
    if score is None:
        why = "no peer test that any candidate passes" if row else "no peer wrote tests"
        return not_applicable("cross_exec", why, details)
    cells = ", ".join(f"{p} {c}" for p, c in row.items())
    return CheckOutcome(
        "cross_exec", score >= 0.5, round(score, 4), f"agreement {score:.2f} ({cells})", details
    )


def execution_checks(
    code: Mapping[str, Sequence[str]],
    acceptance_tests: str,
    sandbox: Sandbox,
    limits: SandboxLimits,
) -> tuple[dict[str, tuple[CheckOutcome, CheckOutcome]], str]:
    """Every candidate run against the acceptance tests and every candidate's tests.

    Args:
        code: agent → its Python blocks, in order.
        acceptance_tests: the task's tests ("" for none).

    Returns:
        (agent → (its ``dryrun``, its ``cross_exec``), ""), or ({}, why nothing ran).
    """
    if not sandbox.available:
        return {}, f"not run: {sandbox.reason}"
    split = {agent: split_code(blocks) for agent, blocks in code.items()}
    authors = {suite_name(a): a for a, (_s, tests) in split.items() if tests.strip()}
    suites = {suite_name(a): tests for a, (_s, tests) in split.items() if tests.strip()}
    acceptance = bool(acceptance_tests.strip())
    if acceptance:
        suites[ACCEPTANCE] = acceptance_tests
        authors.pop(ACCEPTANCE, None)  # an agent named "acceptance" cannot pose as the task
    # Side by side: a run mostly waits on process start-up, and the sandbox bounds how many
    # run at once (its slots), so this never runs more than that.
    with ThreadPoolExecutor(max_workers=max(1, len(split)), thread_name_prefix="sandbox") as pool:
        futures = {
            agent: pool.submit(run_candidate, sandbox, solution, suites, limits)
            for agent, (solution, _t) in split.items()
        }
        runs = {agent: f.result() for agent, f in futures.items()}
    rows = agreement(runs, authors)
    out: dict[str, tuple[CheckOutcome, CheckOutcome]] = {}
    for agent, run in runs.items():
        score, row = rows[agent]
        own = bool(split[agent][1].strip())
        out[agent] = (dryrun_outcome(run, acceptance=acceptance), cross_outcome(score, row, own))
    return out, ""
