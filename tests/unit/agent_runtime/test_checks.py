"""Executable checks and the skeleton score: pure functions, no model needed."""

from __future__ import annotations

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.scoring import assess_candidates
from agent_runtime.checks.static_checks import (
    dryrun_check,
    extract_code_blocks,
    lint_check,
    lint_source,
    policy_check,
    requirement_coverage,
)

GOOD = """Plan: validate the input, then reverse it.

```python
def reverse_text(text: str) -> str:
    if not isinstance(text, str):
        raise TypeError("text must be a string")
    return text[::-1]
```
"""
BROKEN = "```python\ndef reverse_text(text):\n    return text[::-1\n```"
UNDEFINED = "```python\ndef reverse_text(text):\n    return helper(text)\n```"
NO_CODE = "I would reverse the text and validate the input carefully."
REQS = ("validate the input",)


def checks_by_type(content: str, role: str = "DEV") -> dict[str, tuple[bool, float]]:
    [a] = assess_candidates(AssessmentInput("d", role, "t", "", REQS, (Candidate("a", content),)))
    return {c.check_type: (c.passed, c.score) for c in a.checks}


def test_good_code_passes_what_ran_and_what_did_not_run_is_not_passed() -> None:
    assert checks_by_type(GOOD) == {
        "policy": (True, 1.0),
        "dryrun": (False, 1.0),  # without a sandbox nothing ran: it ranks by what compiled
        "lint": (True, 1.0),
        "cross_exec": (False, 0.0),  # not applicable (does not count): nothing runs
    }


def test_code_that_does_not_compile_fails_dryrun_and_is_not_linted() -> None:
    got = checks_by_type(BROKEN)
    assert got["dryrun"] == (False, 0.0)
    assert got["lint"][0] is False
    [block] = extract_code_blocks(BROKEN)
    assert "line" in dryrun_check([block]).message


def test_undefined_name_fails_lint() -> None:
    got = checks_by_type(UNDEFINED)
    assert got["dryrun"] == (False, 1.0)  # compiled; not run (no sandbox)
    assert got["lint"][0] is False
    outcome = lint_check(extract_code_blocks(UNDEFINED))
    assert "helper" in outcome.message and outcome.details["error_count"] == "1"


def test_scores_order_good_over_lint_error_over_broken_over_no_code() -> None:
    # No requirements, so coverage (a separate term) does not blur the code checks' order.
    request = AssessmentInput(
        "d",
        "DEV",
        "reverse",
        "",
        (),
        tuple(Candidate(str(i), c) for i, c in enumerate([NO_CODE, BROKEN, UNDEFINED, GOOD, ""])),
    )
    scores = {a.agent_id: a.score for a in assess_candidates(request)}
    assert scores["3"] > scores["2"] > scores["1"] > scores["0"] > scores["4"] == 0.0
    assert all(0.0 <= s <= 1.0 for s in scores.values())


def test_score_does_not_depend_on_candidate_order() -> None:
    cands = (Candidate("x", GOOD), Candidate("y", UNDEFINED))
    fwd = assess_candidates(AssessmentInput("d", "DEV", "t", "", REQS, cands))
    rev = assess_candidates(AssessmentInput("d", "DEV", "t", "", REQS, cands[::-1]))
    assert {a.agent_id: a.score for a in fwd} == {a.agent_id: a.score for a in rev}


def test_other_roles_score_on_policy_when_their_role_checks_cannot_apply() -> None:
    def qa(text: str) -> tuple[float, dict[str, tuple[bool, float]]]:
        [a] = assess_candidates(AssessmentInput("d", "QA", "t", "", REQS, (Candidate("a", text),)))
        policy = {c.check_type: (c.passed, c.score) for c in a.checks if c.check_type == "policy"}
        for c in a.checks:
            if c.check_type != "policy":
                assert c.message.startswith("not applicable: "), c
        return a.score, policy

    got = qa("Test plan: validate the input with empty and huge strings.")
    assert got == (1.0, {"policy": (True, 1.0)})
    # Non-empty passes the gate (0.5); the rank is policy's 0.5 alone: 0.5 + 0.5·0.5.
    assert qa("Some unrelated words.") == (0.75, {"policy": (True, 0.5)})
    assert qa("   ") == (0.0, {"policy": (False, 0.0)})


def test_dev_answer_without_code_violates_policy() -> None:
    outcome = policy_check(NO_CODE, "DEV", REQS)
    assert not outcome.passed and "no python code block" in outcome.details["violations"]


def test_code_block_extraction() -> None:
    text = "```bash\nls\n```\n```py\nx = 1\n```\n```python\ny = x\n```"
    assert [b.code for b in extract_code_blocks(text)] == ["x = 1\n", "y = x\n"]
    assert [b.code for b in extract_code_blocks("```\nz = 2\n```")] == ["z = 2\n"]
    # A fence cut off by max_tokens still counts (and then fails to compile).
    [cut] = extract_code_blocks("```python\ndef f(:\n")
    assert not dryrun_check([cut]).passed


def test_lint_scopes() -> None:
    code = """
import os, sys
def f(a, b=2):
    xs = [i * a for i in range(b)]
    def g():
        return xs + [len(os.sep)]
    return g()
class C:
    z = 1
    w = z + 1
    def m(self):
        global G
        G = 3
        return super().m() + G + __name__
print(G, C, f)
"""
    report = lint_source(code)
    assert report.errors == ()
    assert report.warnings == ("line 2: F401 `sys` imported but unused",)
    assert lint_source("def f():\n    return g\nclass K:\n    v = nope\n").errors == (
        "line 2: F821 Undefined name `g`",
        "line 4: F821 Undefined name `nope`",
    )


def test_requirement_coverage() -> None:
    assert requirement_coverage("anything", ()) == (1.0, [])
    cov, missing = requirement_coverage("we validate inputs", ("validate input", "log errors"))
    assert cov == 0.5 and missing == ["log errors"]
