"""The two files of Fleet's own that every test run places beside the candidate's code: the test
runner (``_test_runner.py``, run as ``RUNNER_NAME``) and its small ``pytest`` (``_pytest_shim.py``,
importable as ``pytest``). Neither is imported by Fleet; both are copied into the sandbox.

They live here, apart from ``execution`` (which runs them) and ``sandbox_warm`` (whose fork
servers compile them once at start, see ``PRECOMPILED``), so that neither imports the other.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PRECOMPILED", "RUNNER", "RUNNER_NAME", "SHIM", "SHIM_NAME"]

_HERE = Path(__file__).parent
RUNNER_NAME = "_fleet_runner.py"
RUNNER = (_HERE / "_test_runner.py").read_text(encoding="utf-8")
SHIM_NAME = "pytest.py"
SHIM = (_HERE / "_pytest_shim.py").read_text(encoding="utf-8")

PRECOMPILED = {RUNNER_NAME: RUNNER, f"/work/{SHIM_NAME}": SHIM}
"""Path as a run names it → source: what a warm fork server compiles before its first run. A run
whose script (``python3 _fleet_runner.py``, a path relative to the work dir) or imported module
(``/work/pytest.py``, found on ``sys.path``) holds exactly that text runs the code compiled then
instead of compiling it again: 1.3 ms of a run's ~6.6 ms, on every candidate."""
