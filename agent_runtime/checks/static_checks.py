"""The checks that read a proposal's text without running it, and the code blocks they read.

* ``policy``  every role: the answer is non-empty and mentions the requirements; DEV answers
  (``CODE_ROLES``) must also contain a Python code block.
* ``lint``    ruff's correctness rules on the blocks that compile (``role_checks.ruff_lint``).
* ``dryrun``'s compile-only form, for where nothing may run: every block compiles
  (``dryrun_check``), and, where a run was wanted but could not happen, it never passes
  (``not_executed``).

How they count in the score is ``scoring``'s (its module docstring).

Policy details: requirement coverage ``cov`` = fraction of requirements "mentioned" (at least
half of a requirement's significant words, 4+ letters, occur in the answer); DEV policy score
``0.5·has_code + 0.5·cov``, other roles ``0.5 + 0.5·cov``. Lint score
``max(0, 1/(1 + errors) - 0.05·warnings)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent_runtime.checks.role_checks import ToolUnavailableError, ruff_lint, ruff_lint_many
from aggregates.values import EXECUTED_KEY, CheckOutcome

__all__ = [
    "CODE_ROLES",
    "MAX_CODE_CHARS",
    "CodeBlock",
    "LintReport",
    "dryrun_check",
    "extract_code_blocks",
    "lint_check",
    "lint_checks",
    "lint_source",
    "not_executed",
    "policy_check",
    "requirement_coverage",
]

CODE_ROLES = frozenset({"DEV"})
"""Roles whose answers must carry code that compiles and lints."""

MAX_CODE_CHARS = 64_000
"""Longer code is not compiled: a pathological answer must not stall the scorer."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PY_TAGS = frozenset({"python", "py", "python3", "py3"})
_WORD = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str


@dataclass(frozen=True)
class LintReport:
    errors: tuple[str, ...]
    warnings: tuple[str, ...]


# ----------------------------------------------------------------------------- extraction


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Python code from fenced blocks: tagged python/py; untagged ones only if none is tagged.

    An unclosed last fence (the answer was cut by ``max_tokens``) still counts, so a truncated
    program fails to compile instead of vanishing from the score.
    """
    blocks = [CodeBlock(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    tagged = [b for b in blocks if b.language in _PY_TAGS]
    chosen = tagged or [b for b in blocks if not b.language]
    return [b for b in chosen if b.code.strip()]


# ----------------------------------------------------------------------------- compile and lint


def _compile_error(code: str) -> str | None:
    if len(code) > MAX_CODE_CHARS:
        return f"code longer than {MAX_CODE_CHARS} characters"
    try:
        compile(code, "<proposal>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return f"line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def lint_source(code: str) -> LintReport:
    """Ruff's correctness findings on ``code`` as one module: errors (undefined names, ``return``
    outside a function, ``is`` against a literal, ...) and warnings (unused imports, ...).

    Ruff missing or failing is reported as a lint error naming the cause, never as clean code.
    """
    try:
        report = ruff_lint(code)
    except ToolUnavailableError as e:
        return LintReport(errors=(f"cannot lint: {e}",), warnings=())
    return LintReport(errors=report.errors, warnings=report.warnings)


# ----------------------------------------------------------------------------- checks


def requirement_coverage(content: str, requirements: Sequence[str]) -> tuple[float, list[str]]:
    """(fraction of requirements mentioned, the ones that are not)."""
    reqs = [r for r in requirements if r.strip()]
    if not reqs:
        return 1.0, []
    words = set(_WORD.findall(content.lower()))
    missing: list[str] = []
    for req in reqs:
        req_words = _WORD.findall(req.lower())
        significant = [w for w in req_words if len(w) >= 4] or req_words
        hits = sum(1 for w in significant if w in words)
        if not significant or hits * 2 < len(significant):
            missing.append(req)
    return (len(reqs) - len(missing)) / len(reqs), missing


def policy_check(content: str, role: str, requirements: Sequence[str]) -> CheckOutcome:
    """Non-empty, mentions the requirements, and (DEV) carries a Python code block."""
    text = content.strip()
    if not text:
        details = {"violations": "empty", "gate": "true"}
        return CheckOutcome("policy", False, 0.0, "empty proposal", details)
    coverage, missing = requirement_coverage(text, requirements)
    violations = [f"requirement not mentioned: {r}" for r in missing]
    details = {"coverage": f"{coverage:.3f}", "gate": "true"}
    if role.upper() in CODE_ROLES:
        has_code = bool(extract_code_blocks(text))
        if not has_code:
            violations.insert(0, "no python code block")
        score = 0.5 * float(has_code) + 0.5 * coverage
        passed = has_code
    else:
        score = 0.5 + 0.5 * coverage
        passed = True
    if violations:
        details["violations"] = "; ".join(violations)
    message = "ok" if not violations else violations[0]
    return CheckOutcome("policy", passed, round(score, 4), message, details)


def dryrun_check(blocks: Sequence[CodeBlock]) -> CheckOutcome:
    """Every block compiles (no execution: model output never runs on our machines)."""
    if not blocks:
        return CheckOutcome("dryrun", False, 0.0, "no code to compile", {"mode": "compile"})
    failures = [(i, err) for i, b in enumerate(blocks) if (err := _compile_error(b.code))]
    ok = len(blocks) - len(failures)
    details = {"mode": "compile", "blocks": str(len(blocks)), "compiled": str(ok)}
    if failures:
        details["errors"] = "; ".join(f"block {i + 1}: {e}" for i, e in failures)
    message = (
        "all blocks compile" if not failures else f"block {failures[0][0] + 1}: {failures[0][1]}"
    )
    return CheckOutcome(
        "dryrun",
        not failures,
        round(ok / len(blocks), 4),
        message,
        details | {"exit_code": "0" if not failures else "1"},
    )


def not_executed(compiled: CheckOutcome, not_run: str) -> CheckOutcome:
    """The dry run where nothing could execute (``not_run``: "not run: <why>"): ``compiled``
    (``dryrun_check``) still ranks by what compiled, but it never passes, and it claims no exit
    code: a run that did not happen neither passed nor exited."""
    details = {k: v for k, v in compiled.details.items() if k != "exit_code"}
    details[EXECUTED_KEY] = not_run
    message = f"{not_run}; compile only: {compiled.message}"
    return replace(compiled, passed=False, message=message, details=details)


def lint_check(blocks: Sequence[CodeBlock]) -> CheckOutcome:
    """Lint the compiling blocks as one module (later blocks may use earlier definitions)."""
    return lint_checks([blocks])[0]


def lint_checks(candidates: Sequence[Sequence[CodeBlock]]) -> list[CheckOutcome]:
    """``lint_check`` of each candidate's blocks, with one ruff run for all of them."""
    codes = [
        "\n\n".join(b.code for b in blocks if _compile_error(b.code) is None)
        for blocks in candidates
    ]
    linted = [i for i, code in enumerate(codes) if code.strip()]
    try:
        found = ruff_lint_many([codes[i] for i in linted])
        reports = {
            i: LintReport(errors=r.errors, warnings=r.warnings)
            for i, r in zip(linted, found, strict=True)
        }
    except ToolUnavailableError as e:
        cannot = LintReport(errors=(f"cannot lint: {e}",), warnings=())
        reports = dict.fromkeys(linted, cannot)
    return [_lint_outcome(reports.get(i)) for i in range(len(codes))]


def _lint_outcome(report: LintReport | None) -> CheckOutcome:
    """The ``lint`` check of one candidate (``None``: it has no compiling code)."""
    if report is None:
        return CheckOutcome(
            "lint",
            False,
            0.0,
            "no compiling code to lint",
            {"error_count": "0", "warning_count": "0"},
        )
    n_err, n_warn = len(report.errors), len(report.warnings)
    score = max(0.0, 1.0 / (1 + n_err) - 0.05 * n_warn)
    details = {"error_count": str(n_err), "warning_count": str(n_warn)}
    if report.errors:
        details["errors"] = "; ".join(report.errors)
    if report.warnings:
        details["warnings"] = "; ".join(report.warnings)
    message = report.errors[0] if report.errors else f"clean ({n_warn} warnings)"
    return CheckOutcome("lint", n_err == 0, round(score, 4), message, details)
