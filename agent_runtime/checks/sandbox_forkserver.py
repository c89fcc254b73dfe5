"""The fork server that runs *inside* a warm sandbox: copied there as a file, never imported by
Fleet (it imports nothing of Fleet's either).

Why: starting bubblewrap and an interpreter for every run cost 4.4× a bare interpreter start.
This program starts once per sandbox (``sandbox_warm.ForkServer`` starts it ahead of need),
imports what runs use, and then, for each run, forks a child that is the run: the walls are
built once and the interpreter is already warm, so a run costs a fork.

Runs share one sandbox, one after another, never at once, so the server makes each one start
from what the first one saw and see nothing another left:

* the child gets its own files and argv from a memfd that only it reads, and its own output
  pipe (both passed in with the job, ``SCM_RIGHTS``), so the server never holds a run's files
  or output (a later child, a copy of the server's memory, cannot find them there); it sets the
  run's rlimits (CPU, address space, file size, processes, no POSIX message queues) on itself
  before the run's code starts, in a new session;
* the server is the sandbox's pid 1 (``bwrap --as-pid-1``: no other process outlives a run), so
  no run can kill it (init gets no signal it does not handle from inside its namespace), and it
  is not dumpable, so a run (same uid, no capabilities) can neither ptrace it nor read its
  memory or file descriptors through ``/proc``;
* after each run it kills every process of the sandbox but itself (``kill(-1)``,
  repeated until none is left: a fork bomb's children included), empties ``/work``, ``/tmp``
  and ``/dev/shm``, removes what was added to ``/`` and ``/dev``, and compares everything a run
  could change (the writable file systems, SysV IPC objects, the keys it can see) with what it
  recorded before the first run. A difference it cannot undo ends the server: the host then
  starts a fresh sandbox, and the next run never sees it.

Protocol on the socket whose fd is the server's argument (``SOCK_SEQPACKET``; one JSON message
each way per event):
host → server ``{"job": n, "size": bytes, "limits": {...}, "nproc": k}`` with fds
[payload memfd, output pipe], or ``{"kill": n}`` (the host saw the run pass its output cap);
server → host ``{"ready": true}`` once, then ``{"done": n, "code": c, "timed_out": b,
"clean": b}`` per job. The payload is ``{"files": {path: text}, "argv": [...]}``.

Over 400 lines on purpose: it is one program that ``sandbox_warm`` reads as text and copies into
the sandbox as a single file, run by the system ``python3 -I -S`` with nothing but the standard
library. A sibling module would have to be copied in too and found on a path that isolated mode
does not search, and it would sit in ``/work``, which the server empties after each run and a
run can write to: the server would import code a run could have replaced. One file keeps what
the server trusts to what it loaded before the first run.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import stat
import sys
import time
import traceback
import types
from collections.abc import Callable, Mapping
from typing import TypedDict

WARM_MODULES = (
    "collections.abc",
    "dataclasses",
    "functools",
    "itertools",
    "math",
    "re",
    "typing",
    "resource",
    "pkgutil",
    "importlib.machinery",
)
"""What the runs use (the runner and its ``pytest``), imported once here rather than per run."""

PRECOMPILED_FILE = ".fleet-precompiled.json"
"""The host's sources to compile at start (``sandbox_warm.PRECOMPILED_FILE``), read then removed."""
_PRECOMPILED: dict[str, tuple[bytes, types.CodeType]] = {}
"""Path as a run names it → (its source, the code compiled from it before any run)."""

CONTROL_FD = -1
"""The socket to the host (its number is the server's argument)."""
WORK = "/work"
EMPTIED = (WORK, "/tmp", "/dev/shm")
"""Directories every run starts empty."""
WATCHED = ("/", "/dev", "/tmp", "/work")
"""The writable file systems inside the walls (tmpfs): compared after every run."""
_IGNORED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)
"""Signals the server ignores (a run resets them)."""
_PYTHON_FLAGS = frozenset({"-I", "-S", "-E", "-s", "-B", "-u", "-P"})
_SWEEP_S = 2.0
"""How long the server tries to end a run's leftover processes before it gives up on itself."""


class _Job(TypedDict):
    """A run as ``sandbox_warm.WarmSandbox.run`` sends it (the files and argv come apart, in the
    memfd of ``size`` bytes)."""

    job: int
    size: int
    limits: dict[str, float]
    """``SandboxLimits`` as a dict: ``cpu_s``, ``wall_s``, ``memory_mb``, ``file_mb``, …"""
    nproc: int


def _fingerprint() -> list[tuple[object, ...]]:
    """What a run could leave behind for the next one: every entry of the writable file systems
    (not crossing into other mounts), SysV IPC objects and the keys this uid can see."""
    out: list[tuple[object, ...]] = []
    for top in WATCHED:
        dev = os.lstat(top).st_dev
        stack = [top]
        while stack:
            path = stack.pop()
            st = os.lstat(path)
            kind = stat.S_IFMT(st.st_mode)
            entry: tuple[object, ...] = (path, kind, st.st_mode, st.st_uid, st.st_dev == dev)
            if stat.S_ISLNK(st.st_mode):
                entry += (os.readlink(path),)
            elif stat.S_ISREG(st.st_mode):
                entry += (st.st_size, st.st_mtime_ns, st.st_nlink)
            out.append(entry)
            if stat.S_ISDIR(st.st_mode) and st.st_dev == dev:
                stack.extend(os.path.join(path, n) for n in sorted(os.listdir(path)))
    for ipc in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{ipc}") as f:
                out.append((ipc, len(f.read().splitlines())))
        except OSError:
            pass
    try:
        with open("/proc/keys") as f:
            keys = [line.split(None, 8) for line in f if line.strip()]
        out.append(("keys", sorted((k[0], k[7], k[8].split(":")[0]) for k in keys if len(k) == 9)))
    except OSError:
        pass
    return sorted(out, key=repr)


def _others() -> list[int]:
    me = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]


def _reap() -> None:
    """Reap every ended process: the server is the sandbox's init, so orphans come to it."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _sweep() -> bool:
    """End every process but this one (the sandbox's pid 1); True once none is left."""
    deadline = time.monotonic() + _SWEEP_S
    while True:
        _reap()
        if not _others():
            return True
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)


def _remove(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _tidy(first: set[str], modes: dict[str, int]) -> None:
    """Empty ``EMPTIED``; remove what was added to ``/`` and ``/dev`` (``first``: what was
    there); give the emptied directories back their modes (``modes``)."""
    for top, mode in modes.items():
        if os.path.isdir(top) and not os.path.islink(top):
            os.chmod(top, 0o700)
            for name in os.listdir(top):
                _remove(os.path.join(top, name))
            os.chmod(top, mode)
    for top in ("/", "/dev"):
        for name in os.listdir(top):
            path = os.path.join(top, name)
            if path not in first:
                _remove(path)


def _exact(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        chunk = os.pread(fd, left, size - left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _child(job: _Job, payload_fd: int, out_fd: int) -> None:
    """The run itself (never returns): its rlimits, its files, then its argv."""
    code = 1
    try:
        os.setsid()
        os.close(CONTROL_FD)
        for sig in _IGNORED:  # as a fresh interpreter has them
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        raw = _exact(payload_fd, int(job["size"]))
        os.close(payload_fd)
        limits = job["limits"]
        cpu = max(1, int(float(limits["cpu_s"]) + 0.999))
        resource_limits = (
            ("RLIMIT_CPU", cpu, cpu + 1),
            ("RLIMIT_AS", int(limits["memory_mb"]) << 20, int(limits["memory_mb"]) << 20),
            ("RLIMIT_FSIZE", int(limits["file_mb"]) << 20, int(limits["file_mb"]) << 20),
            ("RLIMIT_NPROC", int(job["nproc"]), int(job["nproc"])),
            ("RLIMIT_CORE", 0, 0),
            ("RLIMIT_MSGQUEUE", 0, 0),
        )
        import resource

        for name, soft, hard in resource_limits:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        request = json.loads(raw)
        del raw
        for rel, text in request["files"].items():
            path = os.path.join(WORK, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        del request["files"]
        os.chdir(WORK)
        sys.dont_write_bytecode = True  # as PYTHONDONTWRITEBYTECODE says, which -I ignores
        code = _run(list(request["argv"]))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # the run's own failure is its output, as for a real interpreter
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # a closed or broken stream: nothing more to say
                pass
        os._exit(code & 0xFF)


def _precompile() -> None:
    """Compile the host's sources (Fleet's own runner and ``pytest``) once, before any run, as a
    run would compile them: the bytes, without this file's ``__future__`` flags."""
    try:
        with open(PRECOMPILED_FILE, encoding="utf-8") as f:
            sources: dict[str, str] = json.load(f)
    except FileNotFoundError:
        return
    os.unlink(PRECOMPILED_FILE)
    for path, text in sources.items():
        data = text.encode("utf-8")
        _PRECOMPILED[path] = (data, compile(data, path, "exec", dont_inherit=True))


def _precompiled(path: str) -> types.CodeType | None:
    """The code compiled at start for ``path``, if the run's file there holds exactly its source
    (a run that brings another text at that path gets its own text compiled, as ever)."""
    entry = _PRECOMPILED.get(path)
    if entry is None:
        return None
    source, code = entry
    try:
        with open(path, "rb") as f:
            data = f.read(len(source) + 1)
    except OSError:
        return None
    return code if data == source else None


class _PrecompiledFinder:
    """First on ``sys.meta_path`` in a run: the usual path finder chooses the module's file, and
    where that file's text is one compiled at start, its loader skips the compile."""

    def __init__(self) -> None:
        self.names = {os.path.basename(p)[: -len(".py")] for p in _PRECOMPILED if p.endswith(".py")}

    def find_spec(
        self, name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in self.names or path is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        code = _precompiled(str(spec.origin))
        if code is not None:
            spec.loader = _PrecompiledLoader(name, str(spec.origin), code)
        return spec


class _PrecompiledLoader(importlib.machinery.SourceFileLoader):
    """A source file's loader whose code was compiled before the run."""

    def __init__(self, fullname: str, path: str, code: types.CodeType) -> None:
        super().__init__(fullname, path)
        self.code = code

    def get_code(self, fullname: str) -> types.CodeType:
        return self.code


def _run_script(code: types.CodeType, script: str) -> None:
    """``runpy.run_path(script, run_name="__main__")`` for a script compiled at start: the same
    globals in a fresh ``__main__``."""
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=script, __cached__=None, __doc__=None, __loader__=None, __package__="",
        __spec__=None,
    )  # fmt: skip
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _run(argv: list[str]) -> int:
    """``argv`` as ``python3 [flags] (-c code | script) args`` does it, in this warm interpreter
    (``python3`` names the interpreter this server runs on); anything else is exec'd."""
    if not argv:
        return 0
    program = argv[0]
    python = program in ("python", "python3", sys.executable)
    if python:
        i = 1
        flags: set[str] = set()
        while i < len(argv) and argv[i] in _PYTHON_FLAGS:
            flags.add(argv[i])
            i += 1
        isolated = "-I" in flags or "-P" in flags
        if "-S" not in flags:
            import site

            site.main()
        if i < len(argv) and argv[i] == "-c" and i + 1 < len(argv):
            sys.argv = ["-c", *argv[i + 2 :]]
            if not isolated:
                sys.path.insert(0, "")
            source = argv[i + 1]
            main = types.ModuleType("__main__")  # its own, not this server's
            sys.modules["__main__"] = main
            return _main(lambda: exec(compile(source, "<string>", "exec"), main.__dict__))
        if i < len(argv) and not argv[i].startswith("-"):
            script = argv[i]
            sys.argv = argv[i:]
            if not isolated:
                sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            if _PRECOMPILED:
                sys.meta_path.insert(0, _PrecompiledFinder())
            code = _precompiled(script)
            if code is not None:
                return _main(lambda: _run_script(code, script))
            return _main(lambda: runpy.run_path(script, run_name="__main__"))
    path = sys.executable if python else shutil.which(program, path="/usr/bin:/bin") or program
    os.execv(path, [path, *argv[1:]])
    return 127


def _main(body: Callable[[], object]) -> int:
    try:
        body()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:  # as the interpreter shows it: from the run's own first frame
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>"):
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        code = 1
    atexit._run_exitfuncs()
    return code


def _send(sock: socket.socket, message: Mapping[str, object]) -> None:
    sock.send(json.dumps(message).encode())


def _serve(sock: socket.socket) -> None:
    gc.collect()
    gc.freeze()  # the children then never touch (and so copy) the server's objects to collect
    modes = {top: stat.S_IMODE(os.lstat(top).st_mode) for top in EMPTIED if os.path.isdir(top)}
    snapshot = _fingerprint()
    first = {str(e[0]) for e in snapshot if os.path.dirname(str(e[0])) in ("/", "/dev")}
    _send(sock, {"ready": True})
    devnull = os.open("/dev/null", os.O_RDWR)  # from now on nothing of the server's is shown
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    while True:
        data, fds, _flags, _addr = socket.recv_fds(sock, 65536, 2)
        if not data:
            return
        job: _Job = json.loads(data)  # from the parent that started us, never from a run
        if "job" not in job or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        payload_fd, out_fd = fds
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(job, payload_fd, out_fd)
        os.close(payload_fd)
        os.close(out_fd)
        waiter = os.pidfd_open(pid)
        deadline = started + float(job["limits"]["wall_s"])
        timed_out = kill = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = kill = True
                break
            ready, _, _ = select.select([waiter, sock.fileno()], [], [], left)
            if waiter in ready:
                break
            if sock.fileno() in ready:
                msg, more, _f, _a = socket.recv_fds(sock, 65536, 2)
                for fd in more:
                    os.close(fd)
                if not msg:
                    kill = True
                    break
                if json.loads(msg).get("kill") == job["job"]:
                    kill = True
                    break
        if kill:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        _pid, status = os.waitpid(pid, 0)
        os.close(waiter)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        clean = _sweep()
        if clean:
            try:
                _tidy(first, modes)
                clean = _fingerprint() == snapshot
            except OSError:
                clean = False
        _send(sock, {"done": job["job"], "code": code, "timed_out": timed_out, "clean": clean})
        if not clean:
            return


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0: no ptrace, no /proc/<pid>/mem
        raise OSError(ctypes.get_errno(), "cannot make the fork server non-dumpable")
    global CONTROL_FD
    CONTROL_FD = int(sys.argv[1])
    for name in WARM_MODULES:
        importlib.import_module(name)
    _precompile()
    sock = socket.socket(fileno=CONTROL_FD)
    os.unlink(sys.argv[0])  # this program's own file: the runs' work dir starts empty
    # As the sandbox's init, the server gets from inside only the signals it handles: it
    # handles none, so no run can stop it (SIGKILL and SIGSTOP never reach an init from inside).
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _serve(sock)


if __name__ == "__main__":
    main()
