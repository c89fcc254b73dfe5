"""Each role check on answers it should pass and answers it should fail, with the real tools
(ruff, shellcheck, hadolint, yamllint, jsonschema, sqlglot), and how their weights score."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import agent_runtime.checks.role_checks as role_checks_module
from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.role_checks import (
    RoleCheckConfig,
    ToolUnavailableError,
    ahead,
    python_lint,
    role_checks,
)
from agent_runtime.checks.role_checks import devops as devops_module
from agent_runtime.checks.role_checks._ruff_server import RuffServer, RuffServerError
from agent_runtime.checks.role_checks._tools import find_tool
from agent_runtime.checks.role_checks.blocks import blocks_of
from agent_runtime.checks.scoring import assess_candidates
from agent_runtime.checks.static_checks import (
    extract_code_blocks,
    lint_check,
    lint_checks,
    lint_source,
)
from aggregates.values import CheckOutcome


def fenced(lang: str, code: str) -> str:
    return f"My answer:\n\n```{lang}\n{code.strip()}\n```\n"


def run(
    role: str,
    answer: str,
    *,
    weights: dict[str, float] | None = None,
    metadata: dict[str, str] | None = None,
) -> dict[str, CheckOutcome]:
    config = RoleCheckConfig(weights=weights or {}, metadata=metadata or {})
    return {o.check_type: o for o in role_checks(role, answer, config)}


def applies(o: CheckOutcome) -> bool:
    return not o.message.startswith("not applicable: ")


# ----------------------------------------------------------------------------- Python (ruff)


def test_ruff_lint_catches_an_undefined_name_and_an_unused_import() -> None:
    code = "import os\n\ndef area(r):\n    return pi * r * r\n"
    outcome = lint_check(extract_code_blocks(fenced("python", code)))
    assert not outcome.passed
    assert outcome.details["error_count"] == "1" and outcome.details["warning_count"] == "1"
    assert "F821 Undefined name `pi`" in outcome.details["errors"]
    assert "F401 `os` imported but unused" in outcome.details["warnings"]
    clean = lint_check(extract_code_blocks(fenced("python", "def area(r):\n    return r * r\n")))
    assert clean.passed and clean.score == 1.0


CODES = [
    "import math\n\ndef area(r):\n    return math.pi * r * r\n",
    "def area(r):\n    return math.pi * r * r\n",
    "def area(r) return r\n",
    "import os\n\n\ndef area(r):\n    return r * r\n",
    "x = 1 if y is 'a' else '%d %d' % (1,)\nfor i in range(3): pass\nreturn x\n",
    "s = 'héllo ünïcode'; t = f'{s}' + f'no placeholder' + undefined_ünï\n",
    "def f(:\n\tpass\n",
    "",
    "from os import *\nclass K:\n    def m(self):\n        yield\n        await g()\n",
]


def _comparable(found: list[list[python_lint.Finding]]) -> list[list[tuple[int, str, str]]]:
    return [sorted((f.row, f.rule, f.message) for f in one) for one in found]


def test_the_ruff_server_finds_what_ruff_check_finds() -> None:
    """Each process lints through a long-lived ``ruff server``; ``ruff check`` is its fallback.
    Both give the same findings (rule, line, message), on awkward answers and on every code
    block of the selection corpus (right and wrong candidates, their tests)."""
    from bench.selection.corpus import all_cases

    corpus = [
        b.code
        for case in all_cases()
        for text in (*case.candidates, case.acceptance_tests)
        for b in extract_code_blocks(text if "```" in text else fenced("python", text))
    ]
    codes = CODES + corpus
    served = python_lint._served(codes)
    assert served is not None
    assert _comparable(served) == _comparable(python_lint._checked(codes))
    assert any(found for found in served[: len(CODES)])


def test_without_the_server_one_ruff_check_lints_every_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the server cannot answer, a DEV deliberation's candidates are linted by one
    ``ruff check``, each its own module: one candidate's import does not define a name in
    another's, and the findings match a lint of that candidate alone. A candidate with no
    compiling code gets its own outcome without reaching ruff."""
    candidates = [extract_code_blocks(fenced("python", a)) for a in CODES[:4]]
    alone = [lint_check(c) for c in candidates]
    runs: list[list[str]] = []
    real = python_lint.run_tool

    def counting(name: str, args: list[str], stdin: str) -> Any:
        runs.append(args)
        return real(name, args, stdin)

    monkeypatch.setattr(python_lint, "_served", lambda codes: None)
    monkeypatch.setattr(python_lint, "run_tool", counting)
    together = lint_checks(candidates)
    assert len(runs) == 1
    assert together == alone
    assert [o.passed for o in together] == [True, False, False, True]
    assert "F821 Undefined name `math`" in together[1].details["errors"]
    assert together[2].message == "no compiling code to lint"
    assert together[3].details["warnings"] == "line 1: F401 `os` imported but unused"


def test_without_the_server_or_a_writable_temp_dir_each_candidate_is_linted_from_stdin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No server and a temporary directory that cannot be written (a read-only root in a
    pod): each candidate is linted by a ``ruff check`` of its own from stdin, with the same
    findings."""
    candidates = [extract_code_blocks(fenced("python", a)) for a in CODES[:4]]
    alone = [lint_check(c) for c in candidates]
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    monkeypatch.setattr(python_lint, "_served", lambda codes: None)
    monkeypatch.setattr(python_lint.tempfile, "tempdir", str(locked / "gone"))
    assert lint_checks(candidates) == alone


def test_a_killed_ruff_server_is_replaced_and_its_lint_is_not_lost() -> None:
    """The server SIGKILLed between lints (or dying mid-lint): the next lint starts a fresh one
    and answers as before."""
    before = lint_source(CODES[1])
    server = python_lint._server
    assert server is not None and server._proc is not None
    first = server._proc.pid
    os.kill(first, signal.SIGKILL)
    server._proc.wait(timeout=5)
    after = [lint_source(CODES[1]), lint_source(CODES[1])]
    assert after == [before, before]
    assert server._proc is not None and server._proc.pid != first


def test_a_sigkilled_process_takes_its_ruff_server_with_it() -> None:
    """A dispatcher or actor killed with SIGKILL runs no exit handler: its ruff server must
    still go (it reads its end of the closed pipe), not linger as an orphan per restart."""
    child = subprocess.Popen(
        [sys.executable, "-c", _LINTS_THEN_WAITS],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert child.stdout is not None
        server_pid = int(child.stdout.readline())
        os.kill(server_pid, 0)  # running while its parent lives
        child.kill()
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(server_pid)
    finally:
        child.kill()


_LINTS_THEN_WAITS = """
import time
from agent_runtime.checks.role_checks import python_lint
from agent_runtime.checks.static_checks import lint_source
assert lint_source("import os\\n").warnings
print(python_lint._server._proc.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has gone
    except FileNotFoundError:
        return False


def test_a_server_that_never_answers_gives_way_to_ruff_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that takes the request and never answers is killed at the deadline, the lint
    comes from ``ruff check``, and after three such failures in a row the process stops
    asking servers."""
    mute = tmp_path / "mute-ruff"
    mute.write_text("#!/bin/sh\nexec sleep 600\n")  # takes requests, answers none
    mute.chmod(0o755)
    server = RuffServer(str(mute), ["E9", "F"], {"PATH": "/usr/bin:/bin"})
    started = time.monotonic()
    with pytest.raises(RuffServerError, match="no answer in time"):
        server.lint("x = 1\n", timeout_s=0.3)
    assert time.monotonic() - started < 2.0
    assert server._proc is None  # killed, not left behind

    monkeypatch.setattr(python_lint, "_server", server)
    monkeypatch.setattr(python_lint, "_failures", 0)
    monkeypatch.setattr(python_lint, "TOOL_TIMEOUT_S", 0.2)
    expected = lint_source(CODES[1])  # the real findings, through ruff check
    assert expected.errors == ("line 2: F821 Undefined name `math`",)
    with caplog.at_level("WARNING"):
        assert [lint_source(CODES[1]) for _ in range(3)] == [expected] * 3
    assert "linting with `ruff check` from now on" in caplog.text
    asked: list[str] = []
    monkeypatch.setattr(server, "lint", lambda code, timeout_s: asked.append(code) or [])
    assert lint_source(CODES[1]) == expected
    assert asked == []  # no server asked any more


@pytest.mark.parametrize(
    ("says", "why"),
    [
        ("printf 'Garbage: 1\\r\\n\\r\\n'; exec sleep 600", "a message without its length"),
        ("printf 'Content-Length: 5\\r\\n\\r\\n[1,2]'; exec sleep 600", "not a message"),
        ("printf 'Content-Length: 3\\r\\n\\r\\n{x}'; exec sleep 600", "Expecting property"),
        ("exit 3", "it exited"),
    ],
    ids=["no-length", "not-an-object", "bad-json", "exits"],
)
def test_a_server_that_garbles_or_dies_is_killed_with_a_reason(
    tmp_path: Path, says: str, why: str
) -> None:
    """Whatever a broken server sends, the lint fails fast with a reason (the caller then
    uses ``ruff check``), and no process is left behind."""
    broken = tmp_path / "broken-ruff"
    broken.write_text(f"#!/bin/sh\n{says}\n")
    broken.chmod(0o755)
    server = RuffServer(str(broken), ["E9", "F"], {"PATH": "/usr/bin:/bin"})
    with pytest.raises(RuffServerError, match=why):
        server.lint("x = 1\n", timeout_s=5.0)
    assert server._proc is None


def test_ruff_failing_is_a_lint_error_never_clean_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ruff exiting 2 (it could not lint) with nothing on stdout used to read as "no
    findings"; it is a lint error naming the cause, for every candidate of the run."""
    from agent_runtime.checks.role_checks._tools import ToolRun

    def failing(name: str, args: list[str], stdin: str) -> ToolRun:
        return ToolRun(2, "", "ruff failed: out of file handles")

    monkeypatch.setattr(python_lint, "_served", lambda codes: None)
    monkeypatch.setattr(python_lint, "run_tool", failing)
    outcomes = lint_checks([extract_code_blocks(fenced("python", "x = 1\n"))] * 2)
    assert [o.passed for o in outcomes] == [False, False]
    assert all("cannot lint: ruff failed" in o.message for o in outcomes)


def test_ruff_is_found_on_a_thread_while_another_fills_sysconfig(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh process's first lint on two checking threads at once (a restarted dispatcher
    scoring several deliberations). Python 3.11 fills sysconfig's variables lazily, in a dict
    others can read half-filled: ruff's finder read ``EXE`` as None and raised TypeError, which
    failed the deliberation."""
    filling = threading.Event()
    fill = sysconfig._init_posix  # type: ignore[attr-defined]

    def slow_fill(config_vars: dict[str, Any]) -> None:
        filling.set()
        time.sleep(0.2)  # the window in which another thread reads the dict half-filled
        fill(config_vars)

    monkeypatch.setattr(sysconfig, "_CONFIG_VARS", None)  # as a fresh process has it
    monkeypatch.setattr(sysconfig, "_CONFIG_VARS_INITIALIZED", False, raising=False)  # 3.12+
    monkeypatch.setattr(sysconfig, "_init_posix", slow_fill)
    find_tool.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(find_tool, "ruff")
            assert filling.wait(5)
            second = pool.submit(find_tool, "ruff")
            assert second.result(5) == first.result(5)
    finally:
        find_tool.cache_clear()


def test_data_python_is_linted_by_ruff_too() -> None:
    bad = run("DATA", fenced("python", "def total(rows):\n    return sum(r[col] for r in rows)"))
    assert not bad["ruff"].passed and "`col`" in bad["ruff"].message
    good = run("DATA", fenced("python", "def total(rows):\n    return sum(r['v'] for r in rows)"))
    assert good["ruff"].passed and good["ruff"].score == 1.0


# ----------------------------------------------------------------------------- DEVOPS

SAFE_SH = '#!/bin/bash\nset -euo pipefail\ncp -r "$1"/. "$2"/\n'
UNSAFE_SH = "#!/bin/bash\ncd $1\nfor f in $(ls *.txt); do cp $f /tmp; done\n"


def _devops_answers() -> list[str]:
    from bench.selection.corpus import all_cases

    answers = [a for case in all_cases() if case.role == "DEVOPS" for a in case.candidates]
    odd = [
        fenced("bash", "echo $1\ncd /tmp\n"),
        fenced("sh", "#!/bin/sh\nfor f in $(ls); do echo $f; done\n"),
        fenced("bash", "if [ $x = ü ]; then\n  echo 'non-ASCII'\nfi\n"),
        fenced("dockerfile", "FROM python:3.12-slim\nADD . /app\nCMD python /app/a.py\n"),
        fenced("dockerfile", "FROM\n"),
        fenced("bash", "(\n"),
    ]
    return answers + odd


def test_a_deliberations_shell_and_dockerfile_blocks_are_linted_in_one_run_per_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """shellcheck and hadolint start ~6 and ~17 ms of CPU each: a DEVOPS deliberation lints
    all its answers' blocks with one run of each (shell: one per shebang kind), and every
    block's findings are those of a run of its own, on the selection corpus's DEVOPS answers
    and on awkward blocks (no shebang, non-ASCII, syntax errors)."""
    answers = _devops_answers()
    runs: list[str] = []
    real = devops_module.run_tool

    def counting(name: str, args: list[str], stdin: str) -> Any:
        runs.append(name)
        return real(name, args, stdin)

    monkeypatch.setattr(devops_module, "run_tool", counting)
    config = ahead("DEVOPS", answers, RoleCheckConfig())
    assert sorted(runs) == ["hadolint", "shellcheck", "shellcheck"]
    assert {tool for tool, _ in config.prelinted} == {"shellcheck", "hadolint"}
    runs.clear()
    together = [role_checks("DEVOPS", a, config) for a in answers]
    assert runs == []  # every block was found ahead
    alone = [role_checks("DEVOPS", a, RoleCheckConfig()) for a in answers]
    assert together == alone
    blocks = sum(len(blocks_of(a, k)) for a in answers for k in ("shell", "dockerfile"))
    assert len(runs) == blocks > 20  # alone: a run per block


def test_when_the_run_for_all_fails_each_block_is_linted_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run over many blocks that fails (a tool that cannot take files, a full disk) leaves
    them out of what is found ahead; each check then lints its blocks itself, as before."""
    answers = _devops_answers()[-6:]
    real = devops_module.run_tool

    def no_files(name: str, args: list[str], stdin: str) -> Any:
        if args and args[-1] != "-":
            raise ToolUnavailableError(f"{name} could not start: no files today")
        return real(name, args, stdin)

    monkeypatch.setattr(devops_module, "run_tool", no_files)
    config = ahead("DEVOPS", answers, RoleCheckConfig())
    assert config.prelinted == {}
    assert [role_checks("DEVOPS", a, config) for a in answers] == [
        role_checks("DEVOPS", a, RoleCheckConfig()) for a in answers
    ]
    assert "SC2164" in role_checks("DEVOPS", answers[0], config)[0].message


def test_shellcheck_flags_unquoted_variables_and_unchecked_cd() -> None:
    bad = run("DEVOPS", fenced("bash", UNSAFE_SH))["shellcheck"]
    assert not bad.passed and bad.score < 0.5
    assert "SC2164" in bad.details["errors"] and "SC2045" in bad.details["errors"]
    assert "SC2086" in bad.details["warnings"]  # unquoted: shellcheck's "info" level
    good = run("DEVOPS", fenced("sh", SAFE_SH))["shellcheck"]
    assert good.passed and good.score == 1.0


def test_hadolint_flags_add_and_shell_form_cmd() -> None:
    bad = run(
        "DEVOPS", fenced("dockerfile", "FROM python:3.12-slim\nADD . /app\nCMD python /app/a.py")
    )
    assert not bad["hadolint"].passed
    assert "DL3020" in bad["hadolint"].details["errors"]
    assert "DL3025" in bad["hadolint"].details["errors"]
    good = run(
        "DEVOPS",
        fenced(
            "dockerfile", 'FROM python:3.12-slim\nWORKDIR /app\nCOPY . .\nCMD ["python", "a.py"]'
        ),
    )
    assert good["hadolint"].passed and good["hadolint"].score == 1.0
    # RUN lines go through shellcheck too (hadolint finds the one shipped beside Fleet).
    wipe = fenced("dockerfile", "FROM debian:bookworm-slim\nARG D\nRUN rm -rf $D/*")
    assert "SC2115" in run("DEVOPS", wipe)["hadolint"].message


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: LABEL
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports:
            - containerPort: PORT
"""


def deployment(label: str = "web", port: str = "80") -> str:
    return DEPLOYMENT.replace("LABEL", label).replace("PORT", port)


def test_yamllint_flags_a_duplicate_key_and_broken_yaml() -> None:
    dup = run("DEVOPS", fenced("yaml", "a: 1\nb: 2\na: 3\n"))["yamllint"]
    assert not dup.passed and "key-duplicates" in dup.message
    broken = run("DEVOPS", fenced("yaml", "a: [1, 2\nb: 2\n"))["yamllint"]
    assert not broken.passed and "syntax error" in broken.message
    assert run("DEVOPS", fenced("yaml", deployment()))["yamllint"].passed


def test_k8s_schema_catches_what_the_api_server_would_refuse() -> None:
    assert run("DEVOPS", fenced("yaml", deployment()))["k8s_schema"].score == 1.0
    mismatch = run("DEVOPS", fenced("yaml", deployment(label="webapp")))["k8s_schema"]
    assert not mismatch.passed and "do not match the template's labels" in mismatch.message
    string_port = run("DEVOPS", fenced("yaml", deployment(port='"80"')))["k8s_schema"]
    assert "containerPort: '80' is not of type 'integer'" in string_port.message
    service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n" + (
        "    app: api\n  ports:\n    - port: 80\n"
    )
    orphan = run("DEVOPS", fenced("yaml", deployment() + "---\n" + service))["k8s_schema"]
    assert "Service/web: selector (app=api) matches no pod of this answer" in orphan.message
    bad_name = run(
        "DEVOPS", fenced("yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: My_Secret\n")
    )
    assert "metadata.name" in bad_name["k8s_schema"].message
    plain = run("DEVOPS", fenced("yaml", "retries: 3\n"))["k8s_schema"]
    assert plain.message == "not applicable: no Kubernetes manifest (apiVersion and kind)"


def test_devops_answer_without_blocks_scores_on_policy_alone() -> None:
    text = "Use a blue-green rollout with a health check before switching traffic."
    outcomes = run("DEVOPS", text)
    assert set(outcomes) == {"shellcheck", "hadolint", "yamllint", "k8s_schema"}
    assert not any(applies(o) for o in outcomes.values())
    [a] = assess_candidates(AssessmentInput("d", "DEVOPS", "t", "", (), (Candidate("a", text),)))
    policy = next(c for c in a.checks if c.check_type == "policy")
    assert a.score == policy.score


# ----------------------------------------------------------------------------- DATA (SQL)

SCHEMA = '{"orders": {"id": "int", "customer_id": "int", "total": "double"}}'


def test_sql_is_parsed_for_the_tasks_dialect() -> None:
    mysql = fenced("sql", "SELECT `id`, total FROM orders")
    assert not run("DATA", mysql)["sql"].passed  # postgres by default: backticks do not parse
    ok = run("DATA", mysql, metadata={"sql_dialect": "mysql"})["sql"]
    assert ok.passed and ok.details["dialect"] == "mysql"
    unknown = run("DATA", mysql, metadata={"sql_dialect": "cobol"})["sql"]
    assert unknown.message == "not applicable: metadata.sql_dialect: unknown SQL dialect 'cobol'"


def test_sql_with_the_tasks_schema_finds_unknown_columns() -> None:
    meta = {"sql_schema": SCHEMA}
    good = run(
        "DATA",
        fenced("sql", "SELECT customer_id, SUM(total) FROM orders GROUP BY 1"),
        metadata=meta,
    )
    assert good["sql"].passed and good["sql"].score == 1.0
    typo = run(
        "DATA", fenced("sql", "SELECT customer, SUM(total) FROM orders GROUP BY 1"), metadata=meta
    )
    assert not typo["sql"].passed and "customer" in typo["sql"].message
    broken = run("DATA", fenced("sql", "SELECT FROM WHERE orders"))["sql"]
    assert not broken.passed and broken.message.startswith("postgres cannot parse")


# ----------------------------------------------------------------------------- ARCHITECT

DESIGN = """
# Context
Scoring must judge correctness.

## Decision
We will run candidates in a bubblewrap sandbox.

## Alternatives considered
Docker (needs a daemon), gVisor (heavier).

## Consequences
Linux only; a host without namespaces records the checks as not run.

```mermaid
flowchart LR
  API[gRPC API] -->|assess| Runtime(Agent runtime)
  Runtime --> Sandbox{{bwrap}}
```
"""


def test_a_design_with_sections_an_adr_and_a_diagram_passes() -> None:
    got = run("ARCHITECT", DESIGN)
    assert {k: (o.passed, o.score) for k, o in got.items()} == {
        "sections": (True, 1.0),
        "decisions": (True, 1.0),
        "diagrams": (True, 1.0),
    }


def test_a_blob_of_prose_with_a_broken_diagram_fails_each_part() -> None:
    text = "I think we should use a sandbox.\n\n```mermaid\nflowchart LR\n  A -->\n```\n"
    got = run("ARCHITECT", text)
    assert got["sections"].message == "no section headings"
    assert got["decisions"].details["error_count"] == "3"  # no decision, alternatives, consequences
    assert got["diagrams"].message == "mermaid block 1: line 2: cannot parse 'A -->'"
    plantuml = run("ARCHITECT", "```plantuml\n@startuml\nA -> B\n```")["diagrams"]
    assert plantuml.message == "plantuml block 1: no @enduml"


def test_sequence_diagrams_must_close_their_blocks() -> None:
    good = "```mermaid\nsequenceDiagram\n  participant C\n  C->>S: call\n"
    good += "  alt ok\n  S-->>C: done\n  end\n```"
    assert run("ARCHITECT", good)["diagrams"].passed
    assert not run("ARCHITECT", good.replace("  end\n", ""))["diagrams"].passed


# ----------------------------------------------------------------------------- QA


def test_qa_tests_must_parse_and_define_asserting_test_functions() -> None:
    good = fenced("python", "from solution import f\n\ndef test_f():\n    assert f(2) == 4\n")
    assert run("QA", good)["test_structure"].score == 1.0
    none = run("QA", fenced("python", "x = 1\n"))["test_structure"]
    assert none.message == "no test function (test_* or Test*.test_*)"
    hollow = run("QA", fenced("python", "class TestF:\n    def test_f(self):\n        pass\n"))
    assert hollow["test_structure"].passed and hollow["test_structure"].score == 0.95
    assert not run("QA", fenced("python", "def test_f(:\n"))["test_structure"].passed


# ----------------------------------------------------------------------------- weights


def score(role: str, text: str, weights: dict[str, float]) -> float:
    cand = (Candidate("a", text),)
    [a] = assess_candidates(AssessmentInput("d", role, "t", "", (), cand, check_weights=weights))
    return a.score


def test_the_council_chooses_the_checks_and_their_weights() -> None:
    answer = fenced("bash", UNSAFE_SH) + fenced("yaml", deployment())
    only_shell = run("DEVOPS", answer, weights={"shellcheck": 2.0})
    assert list(only_shell) == ["shellcheck"] and only_shell["shellcheck"].details["weight"] == "2"
    # Shell weighs more: the unsafe script costs more of the score.
    assert score("DEVOPS", answer, {"shellcheck": 3, "yamllint": 1}) < score(
        "DEVOPS", answer, {"shellcheck": 1, "yamllint": 3}
    )
    # A weight of 0 runs the check for the record without counting it.
    muted = score("DEVOPS", answer, {"shellcheck": 0, "yamllint": 1})
    assert muted == score("DEVOPS", answer, {"yamllint": 1})


def test_a_role_without_role_checks_runs_none() -> None:
    assert role_checks("DEV", fenced("python", "x = 1"), RoleCheckConfig()) == []
    assert role_checks("SALES", "anything", RoleCheckConfig()) == []


# ----------------------------------------------------------------------------- robustness


def test_malformed_answers_are_findings_never_crashes() -> None:
    # yamllint itself raises on this one; the YAML parser's complaint becomes the finding.
    crash = run("DEVOPS", fenced("yaml", "}dc'NhUOnY"))["yamllint"]
    assert not crash.passed and crash.message.startswith("syntax error: while parsing")
    control = run("DEVOPS", fenced("yaml", "a: b\x0cc"))["yamllint"]
    assert "unacceptable character" in control.message
    # Lists and numbers where mappings belong: the schema says so, nothing raises.
    odd = "apiVersion: apps/v1\nkind: Deployment\nmetadata: 5\nspec:\n  template: 3\n"
    assert not run("DEVOPS", fenced("yaml", odd))["k8s_schema"].passed
    assert not run("DATA", fenced("sql", "SELECT * FROM ((("))["sql"].passed


def test_a_check_that_fails_is_not_applicable_and_scoring_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(answer: str, config: RoleCheckConfig) -> CheckOutcome:
        raise RuntimeError("tool crashed")

    monkeypatch.setitem(role_checks_module._CHECKS, "shellcheck", broken)
    got = run("DEVOPS", fenced("bash", SAFE_SH))["shellcheck"]
    assert got.message == "not applicable: the check failed: RuntimeError: tool crashed"


@pytest.mark.timeout(10)
def test_a_pathological_diagram_line_is_judged_at_once() -> None:
    # Forty labelled half-links: a backtracking pattern took minutes on this line.
    line = "A" + "-- x " * 40 + "!"
    got = run("ARCHITECT", fenced("mermaid", f"flowchart LR\n{line}"))["diagrams"]
    assert got.message.startswith("mermaid block 1: line 2: cannot parse 'A-- x -- x")
    long = run("ARCHITECT", fenced("mermaid", "flowchart LR\n" + "a" * 5000))["diagrams"]
    assert long.message == "mermaid block 1: line 2: longer than 400 characters"
