"""The Python a client hands in with a task: a QA task's reference code and the acceptance
tests every candidate answer is run against. Code the sandbox could not even load is the
client's mistake, refused when the deliberation is requested, naming the field, rather than
failing every candidate later and for no fault of theirs.

``Deliberation.request`` does not check it: the deliberations a plan or a derivation spawns
carry what was already checked (or nothing), and a stored request is never re-judged.
"""

from __future__ import annotations

from collections.abc import Mapping

from aggregates.errors import InvalidDeliberationError

__all__ = ["ACCEPTANCE_TESTS_KEY", "MAX_TASK_CODE_CHARS", "REFERENCE_KEY", "check_task_code"]

ACCEPTANCE_TESTS_KEY = "acceptance_tests"
"""The key of ``TaskConstraints.metadata`` that carries the tests every candidate answer must
pass (the seed's clients can send them there; ``fleet deliberate --tests`` does); the dispatcher
hands them to the checks (``dispatchers.calls``)."""
REFERENCE_KEY = "reference_code"
"""The metadata key of the code a QA task's tests are for (``agent_runtime.checks.qa_run``)."""
MAX_TASK_CODE_CHARS = 64 * 1024


def check_task_code(metadata: Mapping[str, str]) -> None:
    """Raise InvalidDeliberationError, naming ``constraints.metadata.<key>``, unless the
    acceptance tests and the reference code in ``metadata`` (each optional) compile, and the
    tests define a test function."""
    _check_python(ACCEPTANCE_TESTS_KEY, metadata.get(ACCEPTANCE_TESTS_KEY, ""), tests=True)
    _check_python(REFERENCE_KEY, metadata.get(REFERENCE_KEY, ""), tests=False)


def _check_python(key: str, code: str, *, tests: bool) -> None:
    field = f"constraints.metadata.{key}"
    if not code:
        return
    if len(code) > MAX_TASK_CODE_CHARS:
        raise InvalidDeliberationError(field, f"longer than {MAX_TASK_CODE_CHARS} chars")
    try:
        compile(code, key, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise InvalidDeliberationError(field, f"line {e.lineno}: {e.msg}") from None
    except ValueError as e:
        raise InvalidDeliberationError(field, f"does not compile: {e}") from None
    if tests and "def test" not in code:
        raise InvalidDeliberationError(field, "defines no test function (def test_…)")
