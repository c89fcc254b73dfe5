"""Checks on proposals and the score built from them: checks gate, checks rank, peers break ties.

Checks, in the seed's CheckSuite terms (``CheckOutcome.check_type``):

* ``policy``  every role: the answer is non-empty and mentions the requirements; DEV answers must
  also contain a Python code block.
* ``lint``    DEV: ruff, a real linter, with its correctness rules (``role_checks.ruff_lint``:
  ``E9,F``, pyflakes' findings): undefined names, misplaced statements, ... are errors; unused
  imports and variables are warnings.
* ``dryrun``  DEV, and any role whose task has acceptance tests (``runs_code``): the *real run*
  in the sandbox (``sandbox``, ``execution``): the candidate's solution imported as
  ``solution`` and the task's acceptance tests run against it (``details``: exit code, output
  tail, passed/failed). With acceptance tests it *gates*
  (``details["gate"] == "true"``); without, it checks the solution imports. Where no sandbox
  can run, model code is never executed: ``dryrun`` is ``compile()`` (``details["mode"] ==
  "compile"``), ``details["executed"]`` says "not run: <reason>", and it does not pass (it
  ranks by what compiled; ``not_executed``): a run that did not happen is never passed.
* ``cross_exec`` where ``dryrun`` runs: CodeT's dual agreement: every candidate runs against
  every peer's tests (blocks with a ``def test_...``); its row of the pass matrix is in
  ``details`` (``tests:<peer>`` -> passed/total), its score the weighted agreement.
* role checks (``role_checks``, plugged in by ``role_checks`` below): each role's own tools
  (shellcheck, hadolint, yamllint, a Kubernetes schema, sqlglot, ruff, the structure of a
  design, QA's tests, and QA's tests *run* against the task's reference code in the sandbox),
  each with the council's weight in ``details["weight"]`` (default 1).
* ``peer_review`` the peers' ratings, when they rated.

A check that cannot apply (no sandbox, no peer tests, no shell block for shellcheck, ...) says
so (``applicability``: it does not pass, its message starts "not applicable: ", and
``details["applicable"] == "false"``): it does not count, neither in the gate nor in the rank.

Score (each check's score is in [0, 1]; ``score``):

* gate ``g`` = 1 when every applicable gating check (``details["gate"] == "true"``) passed,
  else 0. ``policy`` gates (an empty answer, or a DEV answer without code, fails it), the
  acceptance run gates (a candidate that fails any acceptance test is ranked below every
  candidate that passes them all, whatever its other checks or its peers say), and so does any
  role check that marks itself a gate (QA's tests that do not import or collect against the
  reference code).
* rank ``r`` = the weighted mean of the applicable checks' scores. Weights: ``RANK_WEIGHTS``
  (policy 0.2, lint 0.2, dryrun 0.3, cross_exec 0.3); a role check weighs
  ``ROLE_CHECK_WEIGHT`` (0.3, as much as an executed check) times the council's weight for it
  (``FLEET_COUNCILS`` ``checks``; 1 unless configured, 0 records it without counting); any
  other check ``DEFAULT_WEIGHT`` (0.2).
* peers ``p`` = the mean usable rating (neutral 0.5 when none was usable).
* total = ``0.5·g + 0.4·r + 0.1·p`` when peers rated, else ``0.5·g + 0.5·r``.

So the checks decide (``g`` and ``r``), and peers' ratings break what the checks leave level:
a 0.1 share cannot lift a failing candidate over the gate, and moves a rank only where the
checks are close. For a role with one applicable role check (QA's ``test_structure``), policy
and the role check weigh 0.2 : 0.3, i.e. 40 % : 60 %.

Policy details: requirement coverage ``cov`` = fraction of requirements "mentioned" (at least
half of a requirement's significant words, 4+ letters, occur in the answer); DEV policy score
``0.5·has_code + 0.5·cov``, other roles ``0.5 + 0.5·cov``. Lint score
``max(0, 1/(1 + errors) - 0.05·warnings)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.checks.applicability import is_applicable, not_applicable
from agent_runtime.checks.execution import execution_checks
from agent_runtime.checks.qa_run import NAME as TEST_RUN
from agent_runtime.checks.qa_run import REFERENCE_KEY, test_run_check
from agent_runtime.checks.role_checks import RoleCheckConfig, ToolUnavailableError, ruff_lint
from agent_runtime.checks.role_checks import role_checks as checks_of_role
from agent_runtime.checks.sandbox import DisabledSandbox, Sandbox, SandboxLimits
from aggregates.values import EXECUTED_KEY, CheckOutcome

__all__ = [
    "CODE_ROLES",
    "RANK_WEIGHTS",
    "ROLE_CHECK_WEIGHT",
    "CodeBlock",
    "LintReport",
    "applies",
    "assess_candidate",
    "assess_candidates",
    "dryrun_check",
    "extract_code_blocks",
    "lint_check",
    "lint_source",
    "needs_sandbox",
    "not_executed",
    "peer_review_check",
    "policy_check",
    "rank_weight",
    "requirement_coverage",
    "role_checks",
    "runs_code",
    "score",
    "with_peer_reviews",
]

CODE_ROLES = frozenset({"DEV"})
"""Roles whose answers must carry code that compiles and lints."""

MAX_CODE_CHARS = 64_000
"""Longer code is not compiled: a pathological answer must not stall the scorer."""

CHECK_LIMITS = SandboxLimits(cpu_s=5.0, memory_mb=256, processes=64, wall_s=10.0)
"""What one candidate's run against all the suites may use (``sandbox``)."""

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
    candidate: Candidate, role: str, requirements: Sequence[str], *, peer_review: bool = False
) -> Assessment:
    """The static checks and score of one proposal, executing nothing (no sandbox).

    ``assess_candidates`` with a sandbox is what scoring uses; this is its no-sandbox form.
    """
    request = AssessmentInput("", role, "", "", tuple(requirements), (candidate,), peer_review)
    return assess_candidates(request)[0]


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


RANK_WEIGHTS: Mapping[str, float] = {"policy": 0.2, "lint": 0.2, "dryrun": 0.3, "cross_exec": 0.3}
"""Weights of the applicable base checks in the rank ``r`` (module docstring)."""
ROLE_CHECK_WEIGHT = 0.3
"""A role check's weight in the rank per unit of the council's weight for it (default 1): as
much as an executed check, since it is the role's own field's tool."""
DEFAULT_WEIGHT = 0.2
"""The weight of a check not named in ``RANK_WEIGHTS`` that carries no council weight."""


def applies(check: CheckOutcome) -> bool:
    """Whether ``check`` counts in the score (one that could not apply says so)."""
    return is_applicable(check)


def rank_weight(check: CheckOutcome, weights: Mapping[str, float] = RANK_WEIGHTS) -> float:
    """``check``'s weight in the rank: the council's (``details["weight"]``, role checks) scaled
    by ``ROLE_CHECK_WEIGHT``, else ``weights``, else ``DEFAULT_WEIGHT``."""
    configured = check.details.get("weight")
    if configured is not None:
        return ROLE_CHECK_WEIGHT * float(configured)
    return weights.get(check.check_type, DEFAULT_WEIGHT)


def score(checks: Sequence[CheckOutcome], weights: Mapping[str, float] = RANK_WEIGHTS) -> float:
    """The total of the module docstring: ``0.5·g + 0.4·r + 0.1·p`` (``0.5·g + 0.5·r``)."""
    counted = [c for c in checks if applies(c) and c.check_type != "peer_review"]
    gate = all(c.passed for c in counted if c.details.get("gate") == "true")
    total_w = sum(rank_weight(c, weights) for c in counted)
    rank = sum(rank_weight(c, weights) * c.score for c in counted) / total_w if total_w > 0 else 0.0
    peers = next((c for c in checks if c.check_type == "peer_review"), None)
    total = 0.5 * gate + (0.5 * rank if peers is None else 0.4 * rank + 0.1 * peers.score)
    return round(min(max(total, 0.0), 1.0), 4)


def _total(checks: Sequence[CheckOutcome], role: str) -> float:
    return score(checks)


def role_checks(
    candidate: Candidate,
    request: AssessmentInput,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits = CHECK_LIMITS,
) -> tuple[CheckOutcome, ...]:
    """The checks of the role's own field (shell, Dockerfiles, YAML, SQL, tests, structure) for
    one candidate, with the council's weights (``request.check_weights``) and the task's
    metadata; QA's tests also run against the task's reference code in ``sandbox``
    (``qa_run``). Each counts in ``score`` by ``rank_weight``; one that cannot apply says so
    and does not count."""
    config = RoleCheckConfig(weights=request.check_weights, metadata=request.metadata)
    box = sandbox or DisabledSandbox("no sandbox given")

    def test_run(answer: str, c: RoleCheckConfig) -> CheckOutcome:
        return test_run_check(answer, c.metadata.get(REFERENCE_KEY, ""), box, limits)

    runners = {TEST_RUN: test_run}
    return tuple(checks_of_role(request.role, candidate.content, config, runners))


def needs_sandbox(request: AssessmentInput) -> bool:
    """Whether scoring ``request`` runs anything in a sandbox: its candidates' code
    (``runs_code``) or a QA answer's tests against the task's reference code (``qa_run``)."""
    return runs_code(request) or (
        request.role.upper() == "QA" and bool(request.metadata.get(REFERENCE_KEY, "").strip())
    )


def runs_code(request: AssessmentInput) -> bool:
    """Whether scoring runs the candidates' Python in the sandbox: always for DEV, and for any
    role whose task brings acceptance tests (a DATA task's functions or queries run against
    them just as a DEV task's do)."""
    return request.role.upper() in CODE_ROLES or bool(request.acceptance_tests.strip())


def assess_candidates(
    request: AssessmentInput,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits = CHECK_LIMITS,
) -> list[Assessment]:
    """One Assessment per candidate, in the candidates' order. Blocks while code runs: call it
    off the event loop when ``sandbox`` is available.

    A score depends on the candidate's text, the role, the requirements, the acceptance tests
    and the *set* of peers' tests, never on positions, so the winner does not depend on agent
    order. Without a (working) ``sandbox`` nothing runs (module docstring).
    """
    role = request.role.upper()
    blocks = {c.agent_id: extract_code_blocks(c.content) for c in request.candidates}
    executed: Mapping[str, tuple[CheckOutcome, CheckOutcome]] = {}
    not_run = ""
    running = runs_code(request)
    if running:
        code = {a: [b.code for b in bs] for a, bs in blocks.items()}
        box = sandbox or DisabledSandbox("no sandbox given")
        executed, not_run = execution_checks(code, request.acceptance_tests, box, limits)
    out: list[Assessment] = []
    for c in request.candidates:
        checks: tuple[CheckOutcome, ...] = (policy_check(c.content, role, request.requirements),)
        if running:
            mine = blocks[c.agent_id]
            if c.agent_id in executed:
                dry, cross = executed[c.agent_id]
            else:
                dry, cross = (
                    not_executed(dryrun_check(mine), not_run),
                    not_applicable("cross_exec", not_run),
                )
                if request.acceptance_tests.strip():
                    details = dry.details | {"acceptance": f"{not_run} (tests given)"}
                    dry = replace(dry, details=details)
            checks = (*checks, dry, cross)
            if role in CODE_ROLES:  # other roles lint Python with their own ``ruff`` check
                checks = (*checks, lint_check(mine))
        checks = (*checks, *role_checks(c, request, sandbox, limits))
        if request.peer_review:
            checks = (*checks, peer_review_check(c))
        out.append(Assessment(c.agent_id, _total(checks, role), checks))
    return out
