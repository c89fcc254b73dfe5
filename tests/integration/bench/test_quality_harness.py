"""The quality harness (``python -m bench.quality``) runs and grades answers right.

Its grading is checked on known answers: right and wrong programs for a word problem (prints a
number) and for a function (unit tests), plus answers that are no program at all. Then the whole
harness runs, as a user runs it, on two problems against the load generator in ``scripted``
mode: the test writes the right answer to the first problem and leaves the second to the
canned (wrong) text, so every method must score exactly 1/2, through the real council
(dispatcher, peer ratings, checks) and the real client. The load generator's answers claim
nothing about any model; they only make the expected table known.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from bench.quality.problems import ALL_PROBLEMS, PROBLEMS, Problem, correct, signature
from bench.selection.corpus import all_cases
from fleet_testing.loadgen import LoadGenServer

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]

BY_ID = {p.id: p for p in PROBLEMS}
FIB = "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a"


def fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\n"


@pytest.mark.parametrize(
    ("problem", "answer", "right"),
    [
        ("apples", fenced("print(3 * 12 - 7)"), True),
        ("apples", "```python\nbags = 3\nprint(f'He has {bags * 12 - 7} apples')", True),
        ("apples", fenced("print(3 * 12 + 7)"), False),
        ("apples", fenced("print(29 / 0)"), False),  # crashes: no answer
        ("apples", "He has 29 apples left.", False),  # prose is no program
        ("fib", fenced(FIB), True),
        ("fib", "```python\n" + FIB, True),  # a fence left open (the budget ran out) still counts
        ("fib", fenced(FIB.replace("range(n)", "range(n + 1)")), False),  # off by one
        ("fib", fenced("def fibonacci(n):\n    return n"), False),  # wrong name
        ("square", fenced("def square(x):\n    return x * x"), True),
        ("square", fenced("def square(x):\n    return abs(x) * 2"), False),
    ],
)
def test_the_checker_grades_known_answers(problem: str, answer: str, right: bool) -> None:
    assert correct(BY_ID[problem], answer) is right


def test_voting_compares_what_programs_do_not_their_text() -> None:
    p: Problem = BY_ID["square"]
    a = signature(p, fenced("def square(x):\n    return x * x"))
    b = signature(p, fenced("def square(y):\n    return y ** 2"))
    assert a is not None and a == b
    assert signature(p, fenced("def square(x):\n    return x + x")) != a


TESTED = {c.task_id: c for c in all_cases() if c.acceptance_tests}


def test_the_corpus_tasks_are_graded_by_their_hidden_acceptance_tests() -> None:
    corpus = [p for p in ALL_PROBLEMS if p.kind == "tests"]
    assert len(ALL_PROBLEMS) >= 40 and len(corpus) == len(TESTED)
    for p in corpus:
        case = TESTED[p.id]
        graded = [correct(p, c) for c in case.candidates]
        assert graded == [i == case.right_index for i in range(len(case.candidates))], p.id
        assert p.acceptance not in p.task  # no method is shown the grading tests


def test_voting_on_a_corpus_task_compares_outputs_on_the_tests_inputs_only() -> None:
    p = next(p for p in ALL_PROBLEMS if p.id == "median")
    case = TESTED["median"]
    right, wrong = case.candidates[case.right_index], case.candidates[0]
    assert signature(p, right) == signature(p, right.replace("s = sorted", "s = list(sorted"
        ).replace("(xs)\n", "(xs))\n", 1))  # fmt: skip
    assert signature(p, right) != signature(p, wrong)
    assert "2.5" in (signature(p, right) or "")  # what median([4, 1, 3, 2]) returned, not a verdict


async def test_the_harness_prints_the_table_with_each_method_graded() -> None:
    first, second = PROBLEMS[:2]
    assert (first.id, second.id) == ("apples", "square")
    script = {first.task: fenced("print(3 * 12 - 7)")}
    async with LoadGenServer("scripted", script=script) as endpoint:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.quality", "--url", endpoint.url, "--model", "loadgen",
            "--problems", "2", "--max-tokens", "64",
            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out_b, err_b = await asyncio.wait_for(proc.communicate(), timeout=100)
        calls = endpoint.counters.answered
    out, err = out_b.decode(), err_b.decode()
    assert proc.returncode == 0, err[-3000:]
    right = r"apples\s+single=True\s+majority\(n=\d+\)=True\s+council=True\s+council\+exec=True"
    assert re.search(right, out), out
    wrong = r"square\s+single=False\s+majority\(n=\d+\)=False\s+council=False\s+council\+exec=False"
    assert re.search(wrong, out), out
    assert "2 problems" in out and f"quality on {endpoint.url} model=loadgen" in out
    rows = {m[0]: m[1:] for m in re.findall(r"^([\w+]+)\s+(\d+)/(\d+)\s+(\d+)\s", out, re.M)}
    assert set(rows) == {"single", "majority", "council", "council+exec"}, out
    for method, (right, total, tokens) in rows.items():
        assert (right, total) == ("1", "2"), method
        assert int(tokens) > 0, f"{method}: token cost missing"
    assert int(rows["council"][2]) > int(rows["single"][2]), "a council costs more than one call"
    assert calls >= 10  # 3 proposals + 3 ratings per council, samples for the vote
