"""QA's tests, run: the tests a QA answer proposes, against the task's reference code (sandboxed).

A QA answer's static check (``role_checks.qa``) sees that its tests parse and assert something;
this one runs them. The task gives the code under test in its metadata (``reference_code``,
Python); the sandbox imports it as the module ``solution`` and runs the answer's Python blocks
as one test suite against it (``execution.run_candidate``: the same runner, walls and limits as
a DEV candidate's run; a suite sees the solution's names, and may ``from solution import ...``).

The check, ``test_run``:

* tests that do not import or collect (a syntax error, a missing module, a name the reference
  code does not define, no ``test_*`` function) fail it *and gate* (``details["gate"]``): a
  suite that cannot run tests nothing, so it ranks below every one that can;
* tests that run score the fraction that pass against the reference code: the reference is the
  right code, so a test that fails against it is a wrong test (or a bug it found, which the
  QA answer should then say; the failures are in the details either way);
* no ``reference_code``, no Python in the answer, no sandbox, or reference code that does not
  import by itself: not applicable (``applicability``), with the reason; it does not count.
"""

from __future__ import annotations

from agent_runtime.checks.applicability import not_applicable
from agent_runtime.checks.execution import OUTPUT_CHARS, SuiteResult, run_candidate
from agent_runtime.checks.role_checks.blocks import blocks_of
from agent_runtime.checks.sandbox import Sandbox, SandboxLimits
from aggregates.task_code import REFERENCE_KEY
from aggregates.values import CheckOutcome

__all__ = ["NAME", "REFERENCE_KEY", "test_run_check"]

NAME = "test_run"
_SUITE = "qa"


def test_run_check(
    answer: str, reference: str, sandbox: Sandbox, limits: SandboxLimits
) -> CheckOutcome:
    """``answer``'s tests run against ``reference`` in ``sandbox`` (module docstring)."""
    if not reference.strip():
        return not_applicable(NAME, f"no reference code (metadata {REFERENCE_KEY})")
    tests = "\n\n".join(blocks_of(answer, "python"))
    if not tests.strip():
        return not_applicable(NAME, "no Python block")
    if not sandbox.available:
        return not_applicable(NAME, f"not run: {sandbox.reason}")
    run = run_candidate(sandbox, reference, {_SUITE: tests}, limits)
    details = {"exit_code": str(run.run.exit_code), "output": run.run.output[-OUTPUT_CHARS:]}
    if not run.reported:
        why = run.why_not
        return CheckOutcome(NAME, False, 0.0, f"tests did not run: {why}", _gate(details, why))
    if run.import_error:
        return not_applicable(NAME, f"the reference code does not import: {run.import_error}")
    suite = run.suites.get(_SUITE, SuiteResult(error="no results"))
    if suite.error or not suite.tests:
        why = suite.error or "no test function (test_*)"
        message = f"tests do not import or collect: {why}"
        return CheckOutcome(NAME, False, 0.0, message, _gate(details, why))
    total = suite.passed + suite.failed
    details |= {"passed": str(suite.passed), "failed": str(suite.failed)}
    if suite.failed:
        details["failures"] = suite.failures()
    message = f"{suite.passed}/{total} pass against the reference code" + (
        f"; {suite.failures(1)}" if suite.failed else ""
    )
    return CheckOutcome(NAME, not suite.failed, round(suite.passed / total, 4), message, details)


def _gate(details: dict[str, str], why: str) -> dict[str, str]:
    return details | {"gate": "true", "reason": why}
