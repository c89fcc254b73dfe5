"""Small problems with checkable answers, all posed as "write Python" so every method is judged
the same way: arithmetic word problems (the program prints the number), small functions
(checked by unit tests), and the selection corpus's tasks that have acceptance tests (``tests``:
graded by those tests, which no method is shown). Model code runs only in a subprocess with a
timeout (``run_code``)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agent_runtime.checks.static_checks import extract_code_blocks


@dataclass(frozen=True)
class Problem:
    id: str
    task: str
    kind: str  # "number" | "function" | "tests"
    answer: float | None = None
    function: str = ""
    tests: tuple[tuple[tuple[object, ...], object], ...] = field(default_factory=tuple)
    acceptance: str = ""
    """``tests`` problems: pytest-style tests importing the answer as ``solution``."""


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


def python_of(text: str) -> str:
    """The Python blocks of an answer as scoring reads them (a DATA answer's ```sql block is
    not Python); the whole text when it has no block."""
    blocks = extract_code_blocks(text)
    return "\n\n".join(b.code for b in blocks) if blocks else code_of(text)


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
    if problem.kind == "tests":
        code = python_of(text)
        calls = _calls_in(problem.acceptance)
        driver = (
            "\nimport json\n\ndef _r(f):\n    try:\n        return repr(f())\n"
            "    except Exception as e:\n        return 'error: ' + type(e).__name__\n\n"
            f"print(json.dumps([{', '.join(f'_r(lambda: {c})' for c in calls)}]))\n"
        )
        out = run_code(code, driver)
        return out.strip().splitlines()[-1] if out and out.strip() else None
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


def _calls_in(tests: str) -> list[str]:
    """The outermost calls of the solution's functions in ``tests`` (their inputs, never the
    expected outputs), as source: what voting evaluates."""
    tree = ast.parse(tests)
    names = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "solution"
        for a in n.names
    }
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            found.append(ast.unparse(node))
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


_TEST_DRIVER = """
import sys, types
sys.path.insert(0, ".")
ns = {"__name__": "acceptance"}
exec(compile(open("acceptance.py").read(), "acceptance.py", "exec"), ns)
for name, fn in list(ns.items()):
    if name.startswith("test") and callable(fn):
        fn()
print("all passed")
"""


def passes_acceptance(problem: Problem, text: str, timeout: float = 10.0) -> bool:
    """``text``'s code, as the module ``solution``, passes every acceptance test."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "solution.py").write_text(python_of(text))
        (Path(d) / "acceptance.py").write_text(problem.acceptance)
        (Path(d) / "driver.py").write_text(_TEST_DRIVER)
        try:
            out = subprocess.run(
                [sys.executable, "-I", "driver.py"],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=d,
            )
        except subprocess.TimeoutExpired:
            return False
    return out.returncode == 0 and out.stdout.strip().endswith("all passed")


def correct(problem: Problem, text: str) -> bool:
    if problem.kind == "tests":
        return passes_acceptance(problem, text)
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

_RUN_CONN = (
    " Answer in Python: a function run(conn) that executes the query on the sqlite3 connection "
    "conn and returns its rows (fetchall())."
)


def corpus_problems() -> tuple[Problem, ...]:
    """The selection corpus's cases with acceptance tests, as problems graded by those tests
    (DEV's functions, DATA's functions and queries): 34 with the corpus of today."""
    from bench.selection.corpus import all_cases

    out: list[Problem] = []
    for case in all_cases():
        if not case.acceptance_tests.strip():
            continue
        task = case.task
        if "import run" in case.acceptance_tests:
            task += _RUN_CONN
        out.append(Problem(case.task_id, task, "tests", acceptance=case.acceptance_tests))
    return tuple(out)


ALL_PROBLEMS = PROBLEMS + corpus_problems()
"""The eight small problems first, then the corpus's: ``--problems 40`` takes them all but two."""
