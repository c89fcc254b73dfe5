"""Python lint with ruff, restricted to the rules that judge correctness, not style.

Rule set ``E9,F`` (pycodestyle's syntax/IO errors and all of pyflakes): the rules whose findings
are bugs or near-bugs in a model's answer (undefined names, names used before assignment,
``return`` outside a function, ``is`` against a literal, malformed ``%``/``format`` calls, unused
imports and variables). Style rules (line length, naming, quotes) are left out on purpose: they
would rank answers by taste and punish right code written in another house style.

Of those, the ones that mean the code cannot work as written are *errors*; the rest (unused
imports or variables, f-strings without placeholders, star imports) are *warnings*.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_runtime.checks.role_checks._tools import (
    MAX_INPUT_CHARS,
    ToolRun,
    ToolUnavailableError,
    run_tool,
)

RUFF_RULES = "E9,F"
_ERROR_PREFIXES = ("E9", "F63", "F7", "F82", "F50", "F52", "invalid-syntax")
"""Syntax errors, invalid comparisons/asserts, misplaced statements, undefined names,
and ``%``/``str.format`` calls that raise at run time."""


@dataclass(frozen=True)
class RuffReport:
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


def ruff_lint(code: str) -> RuffReport:
    """Lint ``code`` as one module with ruff (``--select E9,F``, no config files read).

    Raises:
        ToolUnavailableError: the code is too long to lint, or ruff cannot run here.
    """
    if len(code) > MAX_INPUT_CHARS:
        raise ToolUnavailableError(f"code longer than {MAX_INPUT_CHARS} characters")
    args = [*_ARGS, "--stdin-filename", _MODULE, "-"]
    return _reports(run_tool("ruff", args, code), None, 1)[0]


def ruff_lint_many(codes: Sequence[str]) -> list[RuffReport]:
    """``ruff_lint`` of each of ``codes``, each its own module, in one ruff process.

    A DEV deliberation lints every candidate: one process for all of them instead of one each
    (a ruff start is ~4.5 ms of CPU, most of a lint of a short answer). Each module is written
    to its own folder of a private temporary directory under the same name as ``ruff_lint``'s,
    so that findings read the same either way.

    Raises:
        ToolUnavailableError: a code is too long to lint, or ruff cannot run here.
    """
    if not codes:
        return []
    if any(len(code) > MAX_INPUT_CHARS for code in codes):
        raise ToolUnavailableError(f"code longer than {MAX_INPUT_CHARS} characters")
    try:
        with tempfile.TemporaryDirectory(prefix="fleet-lint-") as tmp:
            where: dict[str, int] = {}
            for i, code in enumerate(codes):
                module = Path(tmp) / str(i) / _MODULE
                module.parent.mkdir()
                module.write_text(code, encoding="utf-8")
                where[str(module.resolve())] = i
            return _reports(run_tool("ruff", [*_ARGS, tmp], ""), where, len(codes))
    except OSError as e:
        raise ToolUnavailableError(f"cannot write the code to lint: {e}") from e


_MODULE = "solution.py"
_ARGS = ("check", "--isolated", "--no-cache", "--output-format", "json", "--select", RUFF_RULES)


def _reports(run: ToolRun, where: dict[str, int] | None, n: int) -> list[RuffReport]:
    """Ruff's JSON findings, sorted into one report per module (``where``: file → index;
    ``None`` for the one module read from stdin)."""
    try:
        found = json.loads(run.stdout or "[]")
    except json.JSONDecodeError:
        raise ToolUnavailableError(f"ruff answered no JSON: {run.stderr.strip()[:200]}") from None
    if run.returncode not in (0, 1):  # 0: clean, 1: findings, 2: ruff itself failed
        raise ToolUnavailableError(f"ruff failed: {run.stderr.strip()[:200]}")
    errors: list[list[str]] = [[] for _ in range(n)]
    warnings: list[list[str]] = [[] for _ in range(n)]
    for item in found:
        at = 0
        if where is not None:
            filename = str(item.get("filename") or "")
            at = where.get(str(Path(filename).resolve()), -1)
            if at < 0:
                raise ToolUnavailableError(f"ruff reported a file it was not given: {filename}")
        rule = str(item.get("code") or "invalid-syntax")
        row = (item.get("location") or {}).get("row", "?")
        line = f"line {row}: {rule} {item.get('message', '')}".rstrip()
        (errors[at] if rule.startswith(_ERROR_PREFIXES) else warnings[at]).append(line)
    return [RuffReport(tuple(e), tuple(w)) for e, w in zip(errors, warnings, strict=True)]
