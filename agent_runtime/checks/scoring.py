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

The checks that read the text without running it (``policy``, ``lint`` and the compile-only
``dryrun``) live in ``static_checks``, with how each scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.checks.applicability import is_applicable, not_applicable
from agent_runtime.checks.execution import execution_checks
from agent_runtime.checks.qa_run import NAME as TEST_RUN
from agent_runtime.checks.qa_run import REFERENCE_KEY, test_run_check
from agent_runtime.checks.role_checks import RoleCheckConfig, ahead
from agent_runtime.checks.role_checks import role_checks as checks_of_role
from agent_runtime.checks.sandbox import DisabledSandbox, Sandbox, SandboxLimits
from agent_runtime.checks.static_checks import (
    CODE_ROLES,
    dryrun_check,
    extract_code_blocks,
    lint_checks,
    not_executed,
    policy_check,
)
from aggregates.values import CheckOutcome

__all__ = [
    "RANK_WEIGHTS",
    "ROLE_CHECK_WEIGHT",
    "applies",
    "assess_candidate",
    "assess_candidates",
    "needs_sandbox",
    "peer_review_check",
    "rank_weight",
    "role_checks",
    "runs_code",
    "score",
    "with_peer_reviews",
]

CHECK_LIMITS = SandboxLimits(cpu_s=5.0, memory_mb=256, processes=64, wall_s=10.0)
"""What one candidate's run against all the suites may use (``sandbox``)."""


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
    config: RoleCheckConfig | None = None,
) -> tuple[CheckOutcome, ...]:
    """The checks of the role's own field (shell, Dockerfiles, YAML, SQL, tests, structure) for
    one candidate, with the council's weights (``request.check_weights``) and the task's
    metadata; QA's tests also run against the task's reference code in ``sandbox``
    (``qa_run``). Each counts in ``score`` by ``rank_weight``; one that cannot apply says so
    and does not count."""
    config = config or role_check_config(request)
    box = sandbox or DisabledSandbox("no sandbox given")

    def test_run(answer: str, c: RoleCheckConfig) -> CheckOutcome:
        return test_run_check(answer, c.metadata.get(REFERENCE_KEY, ""), box, limits)

    runners = {TEST_RUN: test_run}
    return tuple(checks_of_role(request.role, candidate.content, config, runners))


def role_check_config(request: AssessmentInput) -> RoleCheckConfig:
    """The council's weights and the task's metadata, for the role checks of ``request``."""
    return RoleCheckConfig(weights=request.check_weights, metadata=request.metadata)


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
    lints: dict[str, CheckOutcome] = {}
    if running and role in CODE_ROLES:  # other roles lint Python with their own ``ruff`` check
        linted = lint_checks([blocks[c.agent_id] for c in request.candidates])
        lints = {c.agent_id: lint for c, lint in zip(request.candidates, linted, strict=True)}
    answers = [c.content for c in request.candidates]
    config = ahead(request.role, answers, role_check_config(request))
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
            if c.agent_id in lints:
                checks = (*checks, lints[c.agent_id])
        checks = (*checks, *role_checks(c, request, sandbox, limits, config))
        if request.peer_review:
            checks = (*checks, peer_review_check(c))
        out.append(Assessment(c.agent_id, _total(checks, role), checks))
    return out
