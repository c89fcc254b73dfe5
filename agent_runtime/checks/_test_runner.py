"""The test runner that runs *inside* the sandbox: copied there as a file, never imported by Fleet.

Why not pytest: binding Fleet's virtualenv into the sandbox would show it Fleet's installed code,
and importing pytest costs about 150 ms per run where the whole run should take tens of ms. This
runner covers what tests written for a function use: module-level ``test_*`` functions with plain
``assert``, ``pytest.raises``, ``pytest.approx`` and ``pytest.mark.parametrize`` (a small
``pytest`` module beside it provides those). Fixtures are not supported: a test that needs
arguments fails, saying so.

How it runs: ``solution.py`` (the candidate's code) is imported as ``solution``; each file under
``suites/`` is executed in a namespace that starts as a copy of the solution's, so a suite may
``from solution import f`` or call ``f`` directly. Each test gets ``PER_TEST_S`` of wall time (an
alarm); a test that raises fails with the exception's last line. The results are printed last, as
one JSON line after a marker holding the nonce given in ``argv[1]``:
``{"import_error": str, "suites": {name: {"error": str, "tests": {test: "" | why}}}}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import TypedDict

PER_TEST_S = 2.0


class _SuiteReport(TypedDict):
    error: str
    tests: dict[str, str]
    """test → "" when it passed, else why it failed."""


class _Report(TypedDict):
    """The JSON line the runner prints last (``execution.run_candidate`` reads it)."""

    import_error: str
    suites: dict[str, _SuiteReport]


class _TestTimeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _TestTimeout(f"test took over {PER_TEST_S:g} s")


def _why(exc: BaseException) -> str:
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, AssertionError) and not str(exc):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            line = f"assert failed: {(tb[-1].line or '').strip()}"
    return line[:300]


def _cases(fn: Callable[..., object]) -> list[tuple[str, tuple[object, ...]]]:
    params = getattr(fn, "_fleet_parametrize", None)
    if not params:
        return [("", ())]
    names, values = params
    cases: list[tuple[str, tuple[object, ...]]] = []
    for i, v in enumerate(values):
        args = v if len(names) > 1 else (v,)
        cases.append((f"[{i}]", tuple(args)))
    return cases


def _run_suite(name: str, path: str, solution_ns: dict[str, object]) -> _SuiteReport:
    ns = dict(solution_ns)
    ns["__name__"] = f"suite_{name}"
    ns["__file__"] = path
    try:
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), path, "exec")
        exec(code, ns)
    except BaseException as e:  # a suite that fails to load fails, it does not stop us
        return {"error": f"cannot load tests: {_why(e)}", "tests": {}}
    tests: dict[str, str] = {}
    for test_name, fn in list(ns.items()):
        if not test_name.startswith("test") or not callable(fn):
            continue
        if getattr(getattr(fn, "__code__", None), "co_filename", None) != path:
            continue
        for suffix, args in _cases(fn):
            signal.setitimer(signal.ITIMER_REAL, PER_TEST_S)
            try:
                fn(*args)
                outcome = ""
            except BaseException as e:  # every failure is a result
                outcome = _why(e)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            tests[test_name + suffix] = outcome
    return {"error": "", "tests": tests}


def main() -> None:
    nonce = sys.argv[1]
    here = os.getcwd()
    sys.path.insert(0, here)
    signal.signal(signal.SIGALRM, _alarm)
    suites: dict[str, _SuiteReport] = {}
    result: _Report = {"import_error": "", "suites": suites}
    solution_ns: dict[str, object] = {}
    signal.setitimer(signal.ITIMER_REAL, PER_TEST_S)
    try:
        import solution

        solution_ns = dict(vars(solution))
    except BaseException as e:  # the candidate's import error is a result
        result["import_error"] = _why(e)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    suites_dir = os.path.join(here, "suites")
    names = sorted(os.listdir(suites_dir)) if os.path.isdir(suites_dir) else []
    for file in names:
        name = file[:-3] if file.endswith(".py") else file
        if result["import_error"]:
            suites[name] = {"error": "solution did not import", "tests": {}}
            continue
        suites[name] = _run_suite(name, os.path.join(suites_dir, file), solution_ns)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(1, f"\n@@fleet-results {nonce} {json.dumps(result)}\n".encode())


if __name__ == "__main__":
    main()
