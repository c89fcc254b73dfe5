"""Splitting a candidate into solution and tests, and CodeT's agreement over a pass matrix."""

from __future__ import annotations

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.applicability import not_applicable
from agent_runtime.checks.execution import CandidateRun, SuiteResult, agreement, split_code
from agent_runtime.checks.sandbox import DisabledSandbox, SandboxRun
from agent_runtime.checks.scoring import assess_candidates, score
from aggregates.values import CheckOutcome


def test_tests_after_the_code_in_one_block_are_split_off() -> None:
    block = (
        "import math\n"
        "from solution import area\n"
        "import pytest\n\n"
        "def area(r):\n    return math.pi * r * r\n\n"
        "@pytest.mark.parametrize('r', [1, 2])\n"
        "def test_area(r):\n    assert area(r) > 0\n"
    )
    solution, tests = split_code([block])
    assert "def area" in solution and "import math" in solution
    assert "test_area" not in solution and "from solution" not in solution
    assert "@pytest.mark.parametrize" in tests and "def test_area" in tests
    assert "import pytest" in tests


def test_blocks_without_tests_are_all_solution_in_order() -> None:
    solution, tests = split_code(["def a():\n    return 1\n", "def b():\n    return a()\n"])
    assert solution.index("def a") < solution.index("def b") and tests == ""


def test_a_block_that_does_not_parse_stays_in_the_solution() -> None:
    solution, tests = split_code(["def f(:\n    pass\ndef test_f():\n    f()\n"])
    assert "def test_f" in solution and tests == ""


def _run(results: dict[str, dict[str, str]], reported: bool = True) -> CandidateRun:
    run = SandboxRun(0, "", False, "", 0.01)
    return CandidateRun(run, reported, "", {s: SuiteResult("", t) for s, t in results.items()})


def test_agreement_weighs_tests_by_how_many_candidates_pass_them() -> None:
    # b's tests: t1 passed by all three, t2 by a and b only; c's test t3 passed by nobody.
    runs = {
        "a": _run({"b": {"t1": "", "t2": ""}, "c": {"t3": "x"}}),
        "b": _run({"b": {"t1": "", "t2": ""}, "c": {"t3": "x"}}),
        "c": _run({"b": {"t1": "", "t2": "wrong"}, "c": {"t3": "x"}}),
    }
    got = agreement(runs, {"b": "b", "c": "c"})
    assert got["a"] == (1.0, {"b": "2/2", "c": "0/1"})  # t3 weighs nothing: nobody passes it
    score_c, row_c = got["c"]
    assert score_c is not None and abs(score_c - 1 / (1 + 2 / 3)) < 1e-9
    assert row_c == {"b": "1/2"}  # its own suite is not in its row
    assert got["b"][0] is None  # its only peer test (c's) weighs nothing


def test_a_run_that_reported_nothing_agrees_with_nobody() -> None:
    runs = {"a": _run({"b": {"t": ""}}), "b": _run({"b": {"t": ""}}), "c": _run({}, False)}
    got = agreement(runs, {"b": "b"})
    assert got["c"] == (0.0, {"b": "-"})


def test_acceptance_failure_gates_below_any_pass_whatever_the_peers_say() -> None:
    policy = CheckOutcome("policy", True, 1.0, "ok", {"gate": "true"})
    lint_bad = CheckOutcome("lint", False, 0.2, "e")
    ran = {"gate": "true", "mode": "sandbox"}
    passing = [policy, CheckOutcome("dryrun", True, 1.0, "", ran), lint_bad]
    failing = [
        policy,
        CheckOutcome("dryrun", False, 0.9, "", ran),
        CheckOutcome("lint", True, 1.0, ""),
        CheckOutcome("cross_exec", True, 1.0, ""),
    ]
    worst_peers = CheckOutcome("peer_review", False, 0.0)
    best_peers = CheckOutcome("peer_review", True, 1.0)
    assert score([*passing, worst_peers]) > 0.5 > score([*failing, best_peers])


def test_a_check_that_cannot_apply_does_not_count() -> None:
    base = [CheckOutcome("policy", True, 1.0, "ok", {"gate": "true"})]
    absent = not_applicable("cross_exec", "not run: x")
    absent_gate = not_applicable("test_run", "no reference code", {"gate": "true"})
    assert score([*base, absent, absent_gate]) == score(base) == 1.0
    # Even a written-down failure does not count once marked not applicable.
    failed = CheckOutcome("cross_exec", False, 0.0, "not run: x", {"applicable": "false"})
    assert score([*base, failed]) == 1.0


def test_council_weights_override_the_default_weight_of_a_role_check() -> None:
    policy = CheckOutcome("policy", True, 1.0, "ok", {"gate": "true"})

    def role(name: str, s: float, weight: str) -> CheckOutcome:
        return CheckOutcome(name, s == 1.0, s, "", {"weight": weight})

    # Policy 0.2 against a role check at 0.3 x its weight: a bad shellcheck costs more when the
    # council weighs it 2 than at the default 1, and nothing at 0 (recorded, not counted).
    default = score([policy, role("shellcheck", 0.0, "1")])
    heavy = score([policy, role("shellcheck", 0.0, "2")])
    ignored = score([policy, role("shellcheck", 0.0, "0")])
    assert heavy < default < ignored == 1.0
    assert default == round(0.5 + 0.5 * 0.2 / 0.5, 4)
    # A role check that gates sinks a candidate under every one that passes the gate.
    gating = CheckOutcome("test_run", False, 0.9, "x", {"weight": "1", "gate": "true"})
    assert score([policy, gating]) < 0.5 < score([policy, role("shellcheck", 0.0, "1")])


def test_without_a_sandbox_nothing_runs_and_the_checks_say_why() -> None:
    request = AssessmentInput(
        "d",
        "DEV",
        "t",
        "",
        (),
        (Candidate("a", "```python\ndef f():\n    return 1\n```"),),
        acceptance_tests="def test_f():\n    assert f() == 2\n",
    )
    [a] = assess_candidates(request, DisabledSandbox("sandbox turned off (FLEET_SANDBOX=off)"))
    checks = {c.check_type: c for c in a.checks}
    assert checks["dryrun"].details["mode"] == "compile"
    assert checks["dryrun"].details["executed"] == "not run: sandbox turned off (FLEET_SANDBOX=off)"
    assert checks["dryrun"].details["acceptance"].startswith("not run: sandbox turned off")
    assert checks["cross_exec"].message.startswith("not applicable: not run: sandbox turned off")
    assert checks["cross_exec"].details["applicable"] == "false"
