"""Small problems with checkable answers, all posed as "write Python" so every method is judged
the same way: arithmetic word problems (the program prints the number) and small functions
(checked by unit tests). Model code runs only in a subprocess with a timeout (``evaluate``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    id: str
    task: str
    kind: str  # "number" | "function"
    answer: float | None = None
    function: str = ""
    tests: tuple[tuple[tuple[object, ...], object], ...] = field(default_factory=tuple)


PROBLEMS: tuple[Problem, ...] = (
    Problem(
        "apples",
        "Write Python code that prints the answer: Tom has 3 bags with 12 apples "
        "each and gives away 7 apples. How many apples does he have left?",
        "number",
        29,
    ),
    Problem(
        "train",
        "Write Python code that prints the answer: a train travels at 60 km per "
        "hour for 2.5 hours. How many kilometres does it travel?",
        "number",
        150,
    ),
    Problem(
        "pens",
        "Write Python code that prints the answer: pens cost 4 dollars each. How "
        "much do 15 pens cost, in dollars, with a 10 dollar discount on the total?",
        "number",
        50,
    ),
    Problem(
        "eggs",
        "Write Python code that prints the answer: a farm collects 48 eggs a day "
        "and sells them in boxes of 6. How many boxes does it fill in 7 days?",
        "number",
        56,
    ),
    Problem(
        "square",
        "Write a Python function square(x) that returns x times x.",
        "function",
        function="square",
        tests=(((3,), 9), ((-4,), 16), ((0,), 0)),
    ),
    Problem(
        "is_even",
        "Write a Python function is_even(n) that returns True when the integer n "
        "is even and False otherwise.",
        "function",
        function="is_even",
        tests=(((4,), True), ((7,), False), ((0,), True)),
    ),
    Problem(
        "fib",
        "Write a Python function fib(n) that returns the n-th Fibonacci number, with "
        "fib(0) = 0 and fib(1) = 1.",
        "function",
        function="fib",
        tests=(((0,), 0), ((1,), 1), ((10,), 55)),
    ),
    Problem(
        "max3",
        "Write a Python function max3(a, b, c) that returns the largest of three numbers.",
        "function",
        function="max3",
        tests=(((1, 5, 3), 5), ((-1, -5, -3), -1), ((2, 2, 1), 2)),
    ),
)

_FENCE = re.compile(r"```(?:python|py)?[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def code_of(text: str) -> str:
    blocks = _FENCE.findall(text)
    return "\n\n".join(blocks) if blocks else text


def run_code(code: str, stdin_script: str = "", timeout: float = 5.0) -> str | None:
    """Run ``code`` (+ a driver) in a fresh interpreter; its stdout, or None on error/timeout."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "prog.py"
        path.write_text(code + "\n" + stdin_script)
        try:
            out = subprocess.run(
                [sys.executable, "-I", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=d,
            )
        except subprocess.TimeoutExpired:
            return None
    return out.stdout if out.returncode == 0 else None


def signature(problem: Problem, text: str) -> str | None:
    """What a candidate *does* (printed number; outputs on the test inputs), for voting.

    Uses the test inputs only, never the expected outputs, so voting is not an oracle."""
    code = code_of(text)
    if problem.kind == "number":
        out = run_code(code)
        nums = _NUMBER.findall(out or "")
        return f"{float(nums[-1]):g}" if nums else None
    inputs = [list(args) for args, _ in problem.tests]
    driver = (
        f"\nimport json\nprint(json.dumps([repr({problem.function}(*a)) for a in {inputs!r}]))\n"
    )
    out = run_code(code, driver)
    if out is None:
        return None
    lines = out.strip().splitlines()
    return lines[-1] if lines else None


def correct(problem: Problem, text: str) -> bool:
    sig = signature(problem, text)
    if sig is None:
        return False
    if problem.kind == "number":
        return abs(float(sig) - float(problem.answer or 0)) < 1e-6
    try:
        got = json.loads(sig)
    except ValueError:
        return False
    return bool(got == [repr(expected) for _, expected in problem.tests])


# Interleaved, so a small ``--problems N`` still has both kinds.
_ORDER = ("apples", "square", "train", "fib", "pens", "is_even", "eggs", "max3")
PROBLEMS = tuple(sorted(PROBLEMS, key=lambda p: _ORDER.index(p.id)))
