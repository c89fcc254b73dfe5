"""QA answers, statically: the tests they propose parse and define test functions.

Running them (against the task's reference code, in the sandbox) is the execution checks'
job; this check needs no process and says what a reader sees at once: Python that compiles,
with at least one ``test_*`` function (top level or in a ``Test*`` class) that asserts
something (an ``assert`` or a ``pytest.raises``/``approx`` call). A test without an assertion
passes whatever the code does, so it counts as a warning.
"""

from __future__ import annotations

import ast

from agent_runtime.checks.role_checks._outcomes import findings, not_applicable
from agent_runtime.checks.role_checks.blocks import blocks_of
from aggregates.values import CheckOutcome


def _tests_in(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            found.append(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [
                n
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name.startswith("test")
            ]
    return found


def _asserts(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Assert):
            return True
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in {"raises", "approx", "fail"} or name.startswith("assert"):
                return True
    return False


def qa_tests_check(answer: str) -> CheckOutcome:
    blocks = blocks_of(answer, "python")
    if not blocks:
        return not_applicable("test_structure", "no Python block")
    code = "\n\n".join(blocks)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError) as e:
        return findings("test_structure", [f"tests do not parse: {e}"], [], subject="tests")
    tests = _tests_in(tree)
    if not tests:
        return findings(
            "test_structure", ["no test function (test_* or Test*.test_*)"], [], subject="tests"
        )
    hollow = [f"{t.name} asserts nothing" for t in tests if not _asserts(t)]
    return findings("test_structure", [], hollow, subject="tests", extra={"tests": str(len(tests))})
