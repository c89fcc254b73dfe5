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
from dataclasses import dataclass

from agent_runtime.checks.role_checks._tools import MAX_INPUT_CHARS, ToolUnavailableError, run_tool

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
    args = ["check", "--isolated", "--no-cache", "--output-format", "json"]
    args += ["--select", RUFF_RULES, "--stdin-filename", "solution.py", "-"]
    run = run_tool("ruff", args, code)
    try:
        found = json.loads(run.stdout or "[]")
    except json.JSONDecodeError:
        raise ToolUnavailableError(f"ruff answered no JSON: {run.stderr.strip()[:200]}") from None
    errors: list[str] = []
    warnings: list[str] = []
    for item in found:
        rule = str(item.get("code") or "invalid-syntax")
        row = (item.get("location") or {}).get("row", "?")
        line = f"line {row}: {rule} {item.get('message', '')}".rstrip()
        (errors if rule.startswith(_ERROR_PREFIXES) else warnings).append(line)
    return RuffReport(tuple(errors), tuple(warnings))
