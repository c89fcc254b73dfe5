"""Python lint with ruff, restricted to the rules that judge correctness, not style.

Rule set ``E9,F`` (pycodestyle's syntax/IO errors and all of pyflakes): the rules whose findings
are bugs or near-bugs in a model's answer (undefined names, names used before assignment,
``return`` outside a function, ``is`` against a literal, malformed ``%``/``format`` calls, unused
imports and variables). Style rules (line length, naming, quotes) are left out on purpose: they
would rank answers by taste and punish right code written in another house style.

Of those, the ones that mean the code cannot work as written are *errors*; the rest (unused
imports or variables, f-strings without placeholders, star imports) are *warnings*.

Each process lints through one long-lived ``ruff server`` (``_ruff_server``: 0.3 ms a lint,
where starting ``ruff check`` costs ~5 ms of CPU); where that server cannot answer, through
``ruff check``, all of a deliberation's candidates in one run. Both give the same findings.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_runtime.checks.role_checks._ruff_server import Finding, RuffServer, RuffServerError
from agent_runtime.checks.role_checks._tools import (
    MAX_INPUT_CHARS,
    TOOL_TIMEOUT_S,
    ToolRun,
    ToolUnavailableError,
    find_tool,
    run_tool,
    tool_env,
)

log = logging.getLogger(__name__)

RUFF_RULES = "E9,F"
_ERROR_PREFIXES = ("E9", "F63", "F7", "F82", "F50", "F52", "invalid-syntax")
"""Syntax errors, invalid comparisons/asserts, misplaced statements, undefined names,
and ``%``/``str.format`` calls that raise at run time."""
_SERVER_FAILURES = 3
"""Server failures in a row after which this process lints with ``ruff check`` only."""


@dataclass(frozen=True)
class RuffReport:
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


def ruff_lint(code: str) -> RuffReport:
    """Lint ``code`` as one module with ruff (``--select E9,F``, no config files read).

    Raises:
        ToolUnavailableError: the code is too long to lint, or ruff cannot run here.
    """
    return ruff_lint_many([code])[0]


def ruff_lint_many(codes: Sequence[str]) -> list[RuffReport]:
    """``ruff_lint`` of each of ``codes``, each its own module.

    Through this process's ``ruff server``; where it fails, with one ``ruff check`` for all of
    them (a DEV deliberation lints every candidate: one process, not one each).

    Raises:
        ToolUnavailableError: a code is too long to lint, or ruff cannot run here.
    """
    if not codes:
        return []
    if any(len(code) > MAX_INPUT_CHARS for code in codes):
        raise ToolUnavailableError(f"code longer than {MAX_INPUT_CHARS} characters")
    found = _served(codes)
    if found is None:
        found = _checked(codes)
    return [_report(f) for f in found]


def _report(found: Sequence[Finding]) -> RuffReport:
    errors: list[str] = []
    warnings: list[str] = []
    for f in found:
        line = f"line {f.row}: {f.rule} {f.message}".rstrip()
        (errors if f.rule.startswith(_ERROR_PREFIXES) else warnings).append(line)
    return RuffReport(tuple(errors), tuple(warnings))


# ----------------------------------------------------------------------------- ruff server

_SERVER_LOCK = threading.Lock()
_server: RuffServer | None = None
_failures = 0


def _served(codes: Sequence[str]) -> list[list[Finding]] | None:
    """The findings from this process's ``ruff server``, or None where it cannot give them."""
    global _server, _failures
    with _SERVER_LOCK:
        if _failures >= _SERVER_FAILURES:
            return None
        if _server is None:
            try:
                _server = RuffServer(find_tool("ruff"), RUFF_RULES.split(","), tool_env())
            except ToolUnavailableError:
                _failures = _SERVER_FAILURES
                return None
        server = _server
    try:
        found = [server.lint(code, TOOL_TIMEOUT_S) for code in codes]
    except RuffServerError as e:
        with _SERVER_LOCK:
            _failures += 1
            if _failures >= _SERVER_FAILURES:
                log.warning("%s; linting with `ruff check` from now on", e)
        return None
    with _SERVER_LOCK:
        _failures = 0
    return found


# ----------------------------------------------------------------------------- ruff check

_MODULE = "solution.py"
_ARGS = ("check", "--isolated", "--no-cache", "--output-format", "json", "--select", RUFF_RULES)


def _checked(codes: Sequence[str]) -> list[list[Finding]]:
    """The findings from one ``ruff check`` over ``codes``, each its own module in its own
    folder of a private temporary directory; where none can be written, one run per code
    from stdin."""
    try:
        with tempfile.TemporaryDirectory(prefix="fleet-lint-") as tmp:
            where: dict[str, int] = {}
            for i, code in enumerate(codes):
                module = Path(tmp) / str(i) / _MODULE
                module.parent.mkdir()
                module.write_text(code, encoding="utf-8")
                where[str(module.resolve())] = i
            return _findings(run_tool("ruff", [*_ARGS, tmp], ""), where, len(codes))
    except OSError:
        stdin = [*_ARGS, "--stdin-filename", _MODULE, "-"]
        return [_findings(run_tool("ruff", stdin, code), None, 1)[0] for code in codes]


def _findings(run: ToolRun, where: dict[str, int] | None, n: int) -> list[list[Finding]]:
    """Ruff's JSON findings, sorted into one list per module (``where``: file → index; None:
    the one module read from stdin)."""
    try:
        items = json.loads(run.stdout or "[]")
    except json.JSONDecodeError:
        raise ToolUnavailableError(f"ruff answered no JSON: {run.stderr.strip()[:200]}") from None
    if run.returncode not in (0, 1):  # 0: clean, 1: findings, 2: ruff itself failed
        raise ToolUnavailableError(f"ruff failed: {run.stderr.strip()[:200]}")
    found: list[list[Finding]] = [[] for _ in range(n)]
    for item in items:
        filename = str(item.get("filename") or "")
        at = 0 if where is None else where.get(str(Path(filename).resolve()), -1)
        if at < 0:
            raise ToolUnavailableError(f"ruff reported a file it was not given: {filename}")
        location = item.get("location") or {}
        found[at].append(
            Finding(
                rule=str(item.get("code") or "invalid-syntax"),
                row=int(location.get("row", 0)),
                column=int(location.get("column", 0)),
                message=str(item.get("message", "")),
            )
        )
    return [sorted(f, key=lambda x: (x.row, x.column, x.rule)) for f in found]
