"""The selection corpus is labeled right: its labels are what the benchmark's accuracy means.

For every case with acceptance tests, the right candidate passes them and every wrong one fails
at least one; every wrong candidate compiles and lints clean (ruff), so only execution can tell
it apart. The corpus is ours, not model output, so it runs here, in process, in microseconds.
"""

from __future__ import annotations

import sys
import types
from collections import Counter

import pytest

from agent_runtime.checks.static_checks import extract_code_blocks, lint_source
from bench.selection.corpus import SelectionCase, all_cases

CASES = all_cases()
TESTED = [c for c in CASES if c.acceptance_tests]


def _passes(candidate: str, tests: str) -> bool:
    """Import ``candidate``'s Python as ``solution`` and run every ``test_*`` of ``tests``."""
    code = "\n\n".join(b.code for b in extract_code_blocks(candidate))
    module = types.ModuleType("solution")
    saved = sys.modules.get("solution")
    sys.modules["solution"] = module
    try:
        exec(compile(code, "solution.py", "exec"), module.__dict__)
        namespace: dict[str, object] = {}
        exec(compile(tests, "test_acceptance.py", "exec"), namespace)
        for name, fn in namespace.items():
            if name.startswith("test_") and callable(fn):
                fn()
    except Exception:
        return False
    finally:
        if saved is None:
            sys.modules.pop("solution", None)
        else:
            sys.modules["solution"] = saved
    return True


def test_the_corpus_has_forty_cases_across_dev_data_and_devops() -> None:
    roles = Counter(c.role for c in CASES)
    assert len(CASES) >= 40
    assert roles["DEV"] >= 20 and roles["DATA"] >= 10 and roles["DEVOPS"] >= 10
    assert len({c.task_id for c in CASES}) == len(CASES)
    assert all(c.right_index == len(c.candidates) - 1 for c in CASES)  # wrong ones first


@pytest.mark.parametrize("case", TESTED, ids=[c.task_id for c in TESTED])
def test_right_candidate_passes_and_each_wrong_one_fails(case: SelectionCase) -> None:
    results = [_passes(c, case.acceptance_tests) for c in case.candidates]
    expected = [i == case.right_index for i in range(len(case.candidates))]
    assert results == expected


@pytest.mark.parametrize("case", TESTED, ids=[c.task_id for c in TESTED])
def test_wrong_candidates_compile_and_lint_clean(case: SelectionCase) -> None:
    for i, candidate in enumerate(case.candidates):
        code = "\n\n".join(b.code for b in extract_code_blocks(candidate))
        compile(code, f"{case.task_id}[{i}]", "exec")
        report = lint_source(code)
        assert report.errors == () and report.warnings == (), (i, report)
