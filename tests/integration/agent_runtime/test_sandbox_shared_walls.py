"""Runs that share a warm sandbox stay apart: what one run writes, prints, leaves running or
breaks is nowhere the next one can see, and one run's wall (a fork bomb, an endless loop, a
killed runner) costs the next nothing beyond its own limits.

One slot, so every run here goes to the same warm sandbox, one after another (``slots=1``);
candidates are scored as a deliberation scores them (``assess_candidates``), and the raw runs
through ``Sandbox.run``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from agent_runtime.api import AssessmentInput, Candidate
from agent_runtime.checks.execution import run_candidate
from agent_runtime.checks.runner_files import RUNNER_NAME, SHIM, SHIM_NAME
from agent_runtime.checks.sandbox import (
    BwrapSandbox,
    SandboxLimits,
    find_bwrap,
    runnable_by_sandbox_users,
)
from agent_runtime.checks.scoring import assess_candidates

LIMITS = SandboxLimits(cpu_s=1.0, memory_mb=128, processes=32, file_mb=1, wall_s=3.0)
SECRET = "qq-candidate-a-secret-5521"
"""Candidate A's secret. B's code never spells it: B looks for ``MARK`` + ``TAIL``."""
MARK, TAIL = "qq-candidate-a-", "secret-5521"


@pytest.fixture
def box() -> Iterator[BwrapSandbox]:
    bwrap = find_bwrap()
    assert bwrap is not None
    box = BwrapSandbox(runnable_by_sandbox_users(bwrap), "/usr/bin/python3", slots=1)
    yield box
    box.close()


A_LEAVES = f"""
import os, subprocess, sys
secret = {SECRET!r}
for where in ('/work/a.txt', '/tmp/a.txt', '/dev/shm/a.txt', '/a.txt', '/dev/a.txt'):
    try:
        with open(where, 'w') as f:
            f.write(secret)
    except OSError as e:
        print('cannot write', where, e)
os.makedirs('/tmp/deep/er', exist_ok=True)
open('/tmp/deep/er/a.txt', 'w').write(secret)
os.chmod('/tmp/deep', 0)
# a process that outlives the run, in a session of its own, and keeps writing the secret
subprocess.Popen([sys.executable, '-c', '''
import os, time
os.setsid()
while True:
    for w in ('/tmp/late.txt', '/work/late.txt'):
        try:
            open(w, 'w').write({SECRET!r})
        except OSError:
            pass
    print({SECRET!r}, flush=True)
    time.sleep(0.01)
'''], start_new_session=True)
print(secret, flush=True)
print(secret, file=sys.stderr, flush=True)
"""

B_LOOKS = f"""
import gc, os
mark = ''.join([{MARK!r}, {TAIL!r}])  # not folded into one constant
found = []
for top in ('/', '/work', '/tmp', '/dev', '/dev/shm'):
    for root, dirs, files in os.walk(top):
        if root.startswith(('/proc', '/usr', '/sys')):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(root, name)
            if not os.path.isfile(path):
                continue
            try:
                if mark in open(path, errors='replace').read():
                    found.append(path)
            except OSError:
                pass
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        for what in ('cmdline', 'environ', 'cwd'):
            try:
                text = open(f'/proc/{{pid}}/{{what}}', errors='replace').read()
                if mark in text:
                    found.append(f'/proc/{{pid}}/{{what}}')
            except OSError:
                pass
        try:
            with open(f'/proc/{{pid}}/mem', 'rb') as mem:
                found.append(f'/proc/{{pid}}/mem readable')
        except OSError:
            pass
        try:
            os.listdir(f'/proc/{{pid}}/fd')
            found.append(f'/proc/{{pid}}/fd readable')
        except OSError:
            pass
found += ['memory' for o in gc.get_objects() if isinstance(o, str) and mark in o and o is not mark]
print('processes', sorted(p for p in os.listdir('/proc') if p.isdigit()))
print('work', sorted(os.listdir('.')), 'tmp', sorted(os.listdir('/tmp')))
print('FOUND', found)
"""


def test_a_run_sees_nothing_the_run_before_it_wrote_printed_or_left_running(
    box: BwrapSandbox,
) -> None:
    a = box.run({"a.py": A_LEAVES}, ["python3", "-I", "-S", "a.py"], LIMITS)
    assert a.exit_code == 0, a
    assert SECRET in a.output  # A's own output is A's
    b = box.run({"b.py": B_LOOKS}, ["python3", "-I", "-S", "b.py"], LIMITS)
    assert b.exit_code == 0, b
    assert SECRET not in b.output, b.output
    assert "FOUND []" in b.output, b.output
    assert "work ['b.py'] tmp []" in b.output, b.output
    assert "processes ['1', " in b.output and "processes ['1', '2'," not in b.output, b.output
    # the server (the sandbox's pid 1) and B: nothing of A's
    assert box.servers_started == 1, "it shared the warm sandbox A ran in"


def test_two_candidates_of_one_deliberation_cannot_read_each_others_files(
    box: BwrapSandbox,
) -> None:
    """Candidate A writes its secret where it can; candidate B's solution looks for it, and
    B's acceptance test passes only if it found it. A passes, B fails: B found nothing."""
    a_code = (
        "import os\n"
        f"for w in ('/tmp/a.txt', '/work/a.txt', '/a.txt'):\n    open(w, 'w').write({SECRET!r})\n"
        f"print({SECRET!r})\n\n"
        "def saw_secret():\n    return True\n"
    )
    b_code = B_LOOKS + "\n\ndef saw_secret():\n    return bool(found)\n"
    tests = "from solution import saw_secret\n\ndef test_saw():\n    assert saw_secret()\n"
    request = AssessmentInput(
        "shared-walls",
        "DEV",
        "find the secret",
        "",
        (),
        (
            Candidate("agent-a", f"```python\n{a_code}\n```"),
            Candidate("agent-b", f"```python\n{b_code}\n```"),
        ),
        acceptance_tests=tests,
    )
    scored = {x.agent_id: x for x in assess_candidates(request, box, LIMITS)}
    dry = {a: next(c for c in x.checks if c.check_type == "dryrun") for a, x in scored.items()}
    assert dry["agent-a"].passed, dry["agent-a"]
    assert not dry["agent-b"].passed and "acceptance 0/1" in dry["agent-b"].message
    assert SECRET not in dry["agent-b"].details["output"]
    assert "FOUND []" in dry["agent-b"].details["output"]
    assert box.servers_started == 1


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        ("import os\nwhile True:\n    os.fork()\n", "Resource temporarily unavailable|timed out"),
        ("while True:\n    pass\n", "cpu limit|timed out"),  # (on a busy machine, the wall)
        (
            "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "while True:\n    time.sleep(1)\n",
            "timed out",
        ),
        (
            "import os, signal\n"
            "for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):\n"
            "    for pid in (1, os.getppid()):\n"
            "        os.kill(pid, sig)\n"
            "raise SystemExit(7)\n",
            "",
        ),
        ("import os\nos.remove('/bin')\nos.symlink('/tmp', '/bin')\n", ""),
        ("while True:\n    print('x' * 10000)\n", "output limit"),
    ],
    ids=[
        "fork-bomb",
        "endless-loop",
        "sleeps-past-the-wall",
        "tries-to-kill-its-runner",
        "breaks-/bin",
        "floods-output",
    ],
)
def test_one_runs_wall_costs_the_next_run_nothing(
    box: BwrapSandbox, hostile: str, reason: str
) -> None:
    fresh = _look(box)
    bad = box.run({"bad.py": hostile}, ["python3", "-I", "-S", "bad.py"], LIMITS)
    assert bad.exit_code != 0 or hostile.startswith("import os\nos.remove"), bad
    if "SIGKILL" in hostile:  # its server, the sandbox's init, took no signal: it serves on
        assert bad.exit_code == 7 and box.servers_started == 1, bad
    assert any(r in (bad.reason + bad.output) for r in reason.split("|")), bad
    started = time.monotonic()
    after = _look(box)
    took = time.monotonic() - started
    assert after == fresh  # the same tree, nothing in /tmp, no process but the server and it
    assert took < LIMITS.wall_s, f"the next run waited {took:.1f} s"


LOOK = """
import json, os
pids = [p for p in os.listdir('/proc') if p.isdigit()]
print(json.dumps([sorted(os.listdir('/')), os.readlink('/bin'), os.listdir('/tmp'), len(pids)]))
"""


def _look(box: BwrapSandbox) -> list[object]:
    run = box.run({"look.py": LOOK}, ["python3", "-I", "-S", "look.py"], LIMITS)
    assert run.exit_code == 0 and run.reason == "", run
    seen: list[object] = json.loads(run.output)
    assert seen[2:] == [[], 2], seen
    return seen


@pytest.mark.parametrize(
    ("argv", "code", "output"),
    [
        (
            [
                "python3",
                "-I",
                "-S",
                "-c",
                "import sys, __main__ as m; print(sys.argv, dir(m)[-2:])",
            ],
            0,
            "['-c'] ['m', 'sys']",  # its own __main__, not the server's
        ),
        (["python3", "-I", "-S", "-c", "import sys; sys.exit(3)"], 3, ""),
        (["python3", "-c", "raise ValueError('boom')"], 1, "ValueError: boom"),
        (  # Python's own signal defaults: SIGPIPE ignored, SIGINT a KeyboardInterrupt
            [
                "python3",
                "-c",
                "import signal as s\n"
                "print(s.getsignal(s.SIGPIPE) == s.SIG_IGN, s.getsignal(s.SIGINT)"
                " is s.default_int_handler, s.getsignal(s.SIGTERM) == s.SIG_DFL)",
            ],
            0,
            "True True True",
        ),
        (["python3", "-I", "-S", "s.py", "a", "b"], 0, "['s.py', 'a', 'b'] False no mod"),
        (["python3", "s.py"], 0, "['s.py'] False mod"),  # not isolated: its dir is on the path
        (["python3", "-X", "utf8", "s.py"], 0, "['s.py'] False mod"),  # a flag it does not emulate
        (["/bin/sh", "-c", "echo from-sh; exit 4"], 4, "from-sh"),
    ],
    ids=[
        "-c",
        "-c-exit-code",
        "uncaught",
        "signals",
        "script-args",
        "script",
        "exec-python",
        "exec-other",
    ],
)
def test_a_forked_run_behaves_as_the_program_would(
    box: BwrapSandbox, argv: list[str], code: int, output: str
) -> None:
    """A run forked from the warm interpreter answers as a fresh ``python3`` (or program)."""
    script = (
        "import sys, os\ntry:\n    import mod\n    found = 'mod'\nexcept ImportError:\n"
        "    found = 'no mod'\nprint(sys.argv, os.path.exists('__pycache__'), found)\n"
    )
    run = box.run({"s.py": script, "mod.py": "X = 1\n"}, argv, LIMITS)
    assert (run.exit_code, run.reason) == (code, ""), run
    assert output in run.output, run.output
    assert "forkserver" not in run.output  # a traceback shows the run's frames, not the server's


# --------------------------------------------------------------------- code compiled at start

FRAMES = """
import sys

def test_how_it_ran():
    import pytest
    frames, f = [], sys._getframe()
    while f is not None:
        frames.append(f.f_code.co_filename)
        f = f.f_back
    print("@@how", type(pytest.__loader__).__name__, pytest.__file__, "runpy" in str(frames))
"""


def _how(output: str) -> list[str]:
    return next(line.split()[1:] for line in output.splitlines() if line.startswith("@@how"))


def test_fleets_runner_and_pytest_run_as_compiled_before_the_first_run(
    box: BwrapSandbox,
) -> None:
    """Every candidate's run brings Fleet's runner and ``pytest``; the warm server compiled
    them before its first run, and a run holding exactly those texts runs that code: no
    ``runpy`` frame under the runner, ``pytest`` from the precompiled loader, at the same
    path as ever. The result is the runner's usual one."""
    run = run_candidate(box, "def f():\n    return 1\n", {"peer": FRAMES}, LIMITS)
    assert run.reported and run.suites["peer"].tests == {"test_how_it_ran": ""}, run
    assert _how(run.run.output) == ["_PrecompiledLoader", "/work/pytest.py", "False"]


def test_a_run_that_brings_other_text_at_those_paths_runs_its_own(box: BwrapSandbox) -> None:
    """Only the exact text is taken as compiled: a run whose ``_fleet_runner.py`` or
    ``pytest.py`` says something else runs what it brought (compiled then, as usual)."""
    mine = "import sys\nsys.path.insert(0, '/work')\nimport pytest\nprint('mine', pytest.X)\n"
    run = box.run(
        {RUNNER_NAME: mine, SHIM_NAME: SHIM + "\nX = 'changed'\n"},
        ["python3", "-I", "-S", RUNNER_NAME],
        LIMITS,
    )
    assert (run.exit_code, run.reason) == (0, ""), run
    assert "mine changed" in run.output
    again = run_candidate(box, "def f():\n    return 1\n", {"peer": FRAMES}, LIMITS)
    assert _how(again.run.output)[0] == "_PrecompiledLoader"  # the server's copy is unchanged
