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

from bench.quality.problems import PROBLEMS, Problem, correct, signature
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
    assert re.search(r"apples\s+single=True\s+majority\(n=\d+\)=True\s+council=True", out), out
    assert re.search(r"square\s+single=False\s+majority\(n=\d+\)=False\s+council=False", out)
    assert "2 problems" in out and f"quality on {endpoint.url} model=loadgen" in out
    rows = {m[0]: m[1:] for m in re.findall(r"^(\w+)\s+(\d+)/(\d+)\s+(\d+)\s", out, re.M)}
    assert set(rows) == {"single", "majority", "council"}, out
    for method, (right, total, tokens) in rows.items():
        assert (right, total) == ("1", "2"), method
        assert int(tokens) > 0, f"{method}: token cost missing"
    assert int(rows["council"][2]) > int(rows["single"][2]), "a council costs more than one call"
    assert calls >= 10  # 3 proposals + 3 ratings per council, samples for the vote
