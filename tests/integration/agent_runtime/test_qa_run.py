"""QA's proposed tests run against the task's reference code in the sandbox (``qa_run``).

A QA council's answers scored the way a deliberation scores them (``assess_candidates`` with the
real bubblewrap sandbox and the task's ``reference_code``): tests that do not even import or
collect rank below every suite that runs, tests that fail against the right code rank below
tests that pass, and without reference code the check says it cannot apply and counts nothing.
"""

from __future__ import annotations

import pytest

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.checks.sandbox import Sandbox, open_sandbox
from agent_runtime.checks.scoring import assess_candidates

REFERENCE = "def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    m = n // 2\n" \
    "    return s[m] if n % 2 else (s[m - 1] + s[m]) / 2\n"  # fmt: skip
GOOD = """Test cases: odd and even lengths.

```python
from solution import median


def test_odd():
    assert median([3, 1, 2]) == 2


def test_even():
    assert median([4, 1, 3, 2]) == 2.5
```
"""
WRONG_EXPECTATION = GOOD.replace("== 2.5", "== 2")
DOES_NOT_COLLECT = GOOD.replace("from solution import median", "from statistics_lib import median")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    box = open_sandbox("bwrap")  # fails, rather than skips, where the sandbox cannot start
    assert box.available, box.reason
    return box


def assess(sandbox: Sandbox, answers: dict[str, str], reference: str) -> dict[str, Assessment]:
    request = AssessmentInput(
        "qa-run",
        "QA",
        "Write tests for median(xs)",
        "",
        (),
        tuple(Candidate(a, text) for a, text in answers.items()),
        metadata={"reference_code": reference} if reference else {},
    )
    return {a.agent_id: a for a in assess_candidates(request, sandbox)}


def run_of(a: Assessment) -> tuple[bool, float, str]:
    [c] = [c for c in a.checks if c.check_type == "test_run"]
    return c.passed, c.score, c.message


def test_tests_that_run_against_the_reference_rank_above_wrong_ones_and_broken_ones(
    sandbox: Sandbox,
) -> None:
    got = assess(
        sandbox,
        {"qa-1": DOES_NOT_COLLECT, "qa-2": WRONG_EXPECTATION, "qa-3": GOOD},
        REFERENCE,
    )
    assert run_of(got["qa-3"]) == (True, 1.0, "2/2 pass against the reference code")
    passed, score, message = run_of(got["qa-2"])
    assert (passed, score) == (False, 0.5) and message.startswith("1/2 pass")
    assert "test_even" in message
    passed, score, message = run_of(got["qa-1"])
    assert not passed and message.startswith("tests do not import or collect")
    assert "statistics_lib" in message
    # All three look alike to the static check; the run orders them, and the gate puts the
    # suite that cannot run under every one that can.
    assert got["qa-3"].score > got["qa-2"].score > 0.5 > got["qa-1"].score


def test_without_reference_code_the_run_cannot_apply_and_counts_nothing(
    sandbox: Sandbox,
) -> None:
    got = assess(sandbox, {"qa-1": DOES_NOT_COLLECT, "qa-2": GOOD}, "")
    for a in got.values():
        passed, _score, message = run_of(a)
        # not applicable: it says why, does not pass and does not count
        assert not passed
        assert message == "not applicable: no reference code (metadata reference_code)"
    assert got["qa-1"].score == got["qa-2"].score  # as before the run existed
