"""``python -m bench.selection`` as a user runs it: the table, and the exit status it promises.

A fast subset (the DEVOPS cases, about 40 candidates through the real linters): the cases
whose wrong candidates the field's tools flag are all ranked right, the others tie (no check
can run a shell script or a container), and ``--min-accuracy`` turns a shortfall into exit 1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.selection", "--mode", "checks", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


def row(output: str, label: str) -> list[str]:
    [line] = [ln for ln in output.splitlines() if ln.split()[:1] == [label]]
    return line.split()


def test_lint_visible_devops_cases_are_all_ranked_right_by_the_role_checks() -> None:
    done = bench("--role", "devops", "--expect", "lint-visible", "--min-accuracy", "100")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "selection accuracy, checks" in done.stdout
    cases, right, accuracy, ties, wrong = row(done.stdout, "DEVOPS")[1:]
    assert (right, accuracy, ties, wrong) == (cases, "100.0%", "0", "0")
    assert int(cases) >= 10
    assert "scoring per candidate: p50" in done.stdout


def test_a_shortfall_under_min_accuracy_exits_1_and_says_so() -> None:
    done = bench("--role", "DEVOPS", "--expect", "tests", "--min-accuracy", "95", "--show-misses")
    assert done.returncode == 1, done.stdout + done.stderr
    assert row(done.stdout, "all")[3:5] == ["0.0%", "3"]  # every one a tie: only a run can tell
    assert "checks: accuracy 0.0% is under 95%" in done.stdout
    assert "tie   DEVOPS  retry" in done.stdout


def test_bad_arguments_are_one_line_errors_naming_the_option() -> None:
    done = bench("--min-accuracy", "150")
    assert done.returncode == 2
    assert "--min-accuracy: a percentage in 0..100" in done.stderr
    done = bench("--role", "QA")
    assert done.returncode == 2
    assert "--role/--expect: no case of the corpus matches" in done.stderr


def test_with_acceptance_tests_run_in_the_sandbox_the_right_candidate_ranks_first() -> None:
    # The DATA cases (about 30 candidates, each run in the sandbox against the acceptance tests
    # and its peers' tests): checks alone tie them all, the run ranks each right one first.
    args = ("--role", "DATA", "--show-misses")
    alone = bench(*args)
    assert row(alone.stdout, "tested")[2:5] == ["0", "0.0%", "10"], alone.stdout
    done = subprocess.run(
        [sys.executable, "-m", "bench.selection", "--mode", "tests", *args, "--min-accuracy", "95"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "selection accuracy, tests" in done.stdout
    cases, right, accuracy, ties, wrong = row(done.stdout, "tested")[1:]
    assert (right, accuracy, ties, wrong) == (cases, "100.0%", "0", "0")
    assert "bench.sandbox_bench" in done.stdout
