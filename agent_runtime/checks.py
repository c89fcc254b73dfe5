"""Executable checks on proposals, and the skeleton score built from them. Pure functions.

The seed's checks were stubs that always passed, so every score tied and agent 1 always won.
These checks look at the text. Nothing here ever *executes* model output: "dryrun" is
``compile()`` (parse and byte-compile, no execution), and "lint" is ruff, a real linter, with
its correctness rules only (``role_checks.python_lint``: ``E9,F``, pyflakes' findings).

Checks, in the seed's CheckSuite terms (``CheckOutcome.check_type``):

* ``policy``  every role: the answer is non-empty and mentions the requirements; DEV answers must
  also contain a Python code block.
* ``dryrun``  DEV: every Python code block compiles (``details["mode"] == "compile"``).
* ``lint``    DEV: ruff finds no error in the compiling blocks (undefined names, misplaced
  statements, …); unused imports and variables are warnings.
* role checks (``role_checks``): every role's own tools (shellcheck, hadolint, yamllint, a
  Kubernetes schema, sqlglot, ruff, the structure of a design, test functions), weighted as
  the council says; a check that cannot apply says so and does not count.

Score formula (each check's own score is in [0, 1]):

* requirement coverage ``cov`` = fraction of requirements "mentioned": at least half of a
  requirement's significant words (4+ letters; all its words when it has none that long) occur
  in the answer, case-insensitively. No requirements → 1.
* policy score: empty answer → 0. DEV: ``0.5·has_code + 0.5·cov``. Other roles: ``0.5 + 0.5·cov``.
* dryrun score: compiling blocks / blocks (0 with no block).
* lint score: ``max(0, 1/(1 + errors) - 0.05·warnings)`` (0 with no compiling code).
* total: DEV ``0.3·policy + 0.35·dryrun + 0.35·lint``; other roles ``policy``; then the
  role checks blend in (``role_checks.blend``: ``0.4·total + 0.6·role`` where any applies).

A DEV answer without code therefore scores at most 0.3, and one that compiles and lints clean
with full coverage scores 1.

Peer ratings (``AssessmentInput.peer_review``): ``peer`` = the mean of the usable ratings the
candidate received, or a neutral 0.5 when none was usable (recorded in the ``peer_review`` check's
details with the number of fallbacks). The score becomes ``checks · (0.5 + 0.5·peer)``: the
executable checks gate (code that does not compile cannot be rescued by praise, it keeps at most
0.3 of the scale), and the peers rank among the proposals that pass them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.role_checks import (
    RoleCheckConfig,
    ToolUnavailableError,
    blend,
    role_checks,
    ruff_lint,
)
from aggregates.values import CheckOutcome

__all__ = [
    "CODE_ROLES",
    "CodeBlock",
    "LintReport",
    "assess_candidate",
    "assess_candidates",
    "dryrun_check",
    "extract_code_blocks",
    "lint_check",
    "lint_source",
    "peer_review_check",
    "policy_check",
    "requirement_coverage",
    "with_peer_reviews",
]

CODE_ROLES = frozenset({"DEV"})
"""Roles whose answers must carry code that compiles and lints."""

MAX_CODE_CHARS = 64_000
"""Longer code is not compiled: a pathological answer must not stall the scorer."""

WEIGHTS_CODE = {"policy": 0.3, "dryrun": 0.35, "lint": 0.35}

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
    outside a function, ``is`` against a literal, …) and warnings (unused imports, …).

    Replaces a hand-written pass over the compiler's symbol tables: ruff covers all of pyflakes
    (names used before assignment in a scope, redefinitions, format-string errors) in ~5 ms.
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
        return CheckOutcome("policy", False, 0.0, "empty proposal", {"violations": "empty"})
    coverage, missing = requirement_coverage(text, requirements)
    violations = [f"requirement not mentioned: {r}" for r in missing]
    details = {"coverage": f"{coverage:.3f}"}
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


def lint_check(blocks: Sequence[CodeBlock]) -> CheckOutcome:
    """Lint the compiling blocks as one module (later blocks may use earlier definitions)."""
    code = "\n\n".join(b.code for b in blocks if _compile_error(b.code) is None)
    if not code.strip():
        return CheckOutcome(
            "lint",
            False,
            0.0,
            "no compiling code to lint",
            {"error_count": "0", "warning_count": "0"},
        )
    report = lint_source(code)
    n_err, n_warn = len(report.errors), len(report.warnings)
    score = max(0.0, 1.0 / (1 + n_err) - 0.05 * n_warn)
    details = {"error_count": str(n_err), "warning_count": str(n_warn)}
    if report.errors:
        details["errors"] = "; ".join(report.errors)
    if report.warnings:
        details["warnings"] = "; ".join(report.warnings)
    message = report.errors[0] if report.errors else f"clean ({n_warn} warnings)"
    return CheckOutcome("lint", n_err == 0, round(score, 4), message, details)


# ----------------------------------------------------------------------------- scoring


NEUTRAL_RATING = 0.5


def peer_review_check(candidate: Candidate) -> CheckOutcome:
    """The peers' ratings of one proposal as a check (mean of the usable ones, else neutral)."""
    usable = [r.score for r in candidate.peer_reviews if r.score is not None]
    fallbacks = len(candidate.peer_reviews) - len(usable)
    peer = sum(usable) / len(usable) if usable else NEUTRAL_RATING
    details = {
        "ratings": str(len(usable)),
        "fallbacks": str(fallbacks),
        "by": "; ".join(
            f"{r.reviewer}={'-' if r.score is None else f'{r.score:.2f}'} ({r.source})"
            for r in candidate.peer_reviews
        ),
    }
    if not usable:
        details["neutral"] = "no usable peer rating: neutral 0.5"
    message = f"{len(usable)} peer rating(s), mean {peer:.2f}" + (
        f"; {fallbacks} unusable" if fallbacks else ""
    )
    return CheckOutcome("peer_review", bool(usable), round(peer, 4), message, details)


def assess_candidate(
    candidate: Candidate,
    role: str,
    requirements: Sequence[str],
    *,
    peer_review: bool = False,
    role_config: RoleCheckConfig | None = None,
) -> Assessment:
    """The checks and the total score of one proposal (formula in the module docstring)."""
    policy = policy_check(candidate.content, role, requirements)
    if role.upper() not in CODE_ROLES:
        checks: tuple[CheckOutcome, ...] = (policy,)
    else:
        blocks = extract_code_blocks(candidate.content)
        checks = (policy, dryrun_check(blocks), lint_check(blocks))
    checks += tuple(role_checks(role, candidate.content, role_config or RoleCheckConfig()))
    if peer_review:
        checks = (*checks, peer_review_check(candidate))
    return Assessment(candidate.agent_id, _total(checks, role), checks)


def with_peer_reviews(assessment: Assessment, candidate: Candidate, role: str) -> Assessment:
    """``assessment`` (executable checks only) with ``candidate``'s peer ratings folded in.

    Equal to ``assess_candidate(candidate, role, …, peer_review=True)``: the executable checks
    depend on the text alone, so they can run while the peers are still rating it (the
    dispatcher starts them as soon as the final proposals are known) and the ratings join
    them here, a few microseconds at scoring time.
    """
    checks = tuple(c for c in assessment.checks if c.check_type != "peer_review")
    checks = (*checks, peer_review_check(candidate))
    return Assessment(assessment.agent_id, _total(checks, role), checks)


def _total(checks: Sequence[CheckOutcome], role: str) -> float:
    by_type = {c.check_type: c for c in checks}
    if role.upper() not in CODE_ROLES:
        total = by_type["policy"].score
    else:
        total = sum(WEIGHTS_CODE[t] * by_type[t].score for t in WEIGHTS_CODE)
    total = blend(total, checks)
    peers = by_type.get("peer_review")
    if peers is not None:
        total *= 0.5 + 0.5 * peers.score
    return round(min(max(total, 0.0), 1.0), 4)


def assess_candidates(request: AssessmentInput) -> list[Assessment]:
    """One Assessment per candidate, in the candidates' order.

    Each score depends only on that candidate's text, the role and the requirements, never on
    its position, so a winner chosen from these scores does not depend on agent order.
    """
    config = RoleCheckConfig(weights=request.check_weights, metadata=request.metadata)
    return [
        assess_candidate(
            c,
            request.role,
            request.requirements,
            peer_review=request.peer_review,
            role_config=config,
        )
        for c in request.candidates
    ]
