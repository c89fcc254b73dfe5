"""Warm sandboxes: one bubblewrap per slot, started ahead of need, whose runs are forked children.

A cold run (``sandbox.BwrapSandbox`` without warm servers) starts bubblewrap and an interpreter
for every candidate: 4.4× a bare interpreter start. A ``ForkServer`` is the same walls (the same
``bwrap`` command, the same uid per slot) with ``sandbox_forkserver`` inside: it starts once,
imports what runs use, and forks one child per run, which sets the run's rlimits on itself,
reads its files from a memfd only it gets, and writes to an output pipe only it gets. Runs in
one server follow one another, never overlap, and each starts from what the first saw (the
server ends every process a run left, empties the writable directories and checks that nothing
else changed; see ``sandbox_forkserver``). Where anything is left that it cannot undo, or a run
hit a wall (killed at its deadline or output cap: the server is then retired rather than
trusted), the server goes and a fresh one starts in the background for the next run.

The wall clock is kept by the server (it kills the run's process group at the deadline) and,
should the server itself stop answering, by this side too (``wall_s`` plus a grace): then the
whole sandbox is killed, as for a cold run. The output cap is counted here, as the output
comes; past it, the server is told to kill the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_runtime.checks.runner_files import PRECOMPILED

__all__ = ["FORKSERVER", "ForkServer", "ForkServerError", "Outcome"]

FORKSERVER = (Path(__file__).parent / "sandbox_forkserver.py").read_text(encoding="utf-8")
"""The program the warm sandbox runs (copied in as a file, never imported by Fleet)."""
START_TIMEOUT_S = 20.0
"""How long a fork server may take to say it is ready."""
GRACE_S = 3.0
"""How long past a run's wall clock this side waits for the server before killing the sandbox."""
PRECOMPILED_FILE = ".fleet-precompiled.json"
"""Where the server finds the sources to compile at start (``runner_files.PRECOMPILED``); it
reads and removes the file before its first run, as it removes its own program."""
MAX_RUNS = 500
"""Runs one server serves before it is replaced (a fresh interpreter now and then)."""


class ForkServerError(Exception):
    """A fork server could not start, or died before a run started (the run can go elsewhere)."""


Outcome = tuple[int, bytes, bool, str]
"""(exit code, output tail, timed out, reason or "") of one run."""


class ForkServer:
    """One warm sandbox; one run at a time (its slot's). Not thread-safe: the slot serialises.

    Build with ``ForkServer.start``.
    """

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self._proc = proc
        self._control = control
        self._runs = 0
        self._usable = True
        self._closed = False

    @classmethod
    def start(
        cls,
        walls: Sequence[str],
        python: str,
        preexec: Callable[[], None],
        files: Callable[[Mapping[str, str]], tuple[list[str], list[int]]],
    ) -> ForkServer:
        """Start ``bwrap`` (``walls``: its arguments up to the files) with the server inside.

        Args:
            walls: the ``bwrap`` command line without files, ``--chdir`` or program.
            python: the interpreter inside.
            preexec: run in the child before ``bwrap`` (uid, rlimits of the server itself).
            files: places files in the work dir: (arguments, fds to pass), as a cold run does.

        Raises:
            ForkServerError: bwrap or the server did not start (the reason in the message).
        """
        name = ".fleet-forkserver.py"
        file_args, fds = files({name: FORKSERVER, PRECOMPILED_FILE: json.dumps(PRECOMPILED)})
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        inside = f"/work/{name}"
        control = str(theirs.fileno())
        cmd = [*walls, "--as-pid-1", *file_args, "--chdir", "/work", "--"]
        cmd += [python, "-I", "-S", inside, control]
        try:
            proc = subprocess.Popen(  # argv is ours; the server runs inside bwrap
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=[*fds, theirs.fileno()],
                start_new_session=True,
                preexec_fn=preexec,
                env={},
            )
        except OSError as e:
            ours.close()
            raise ForkServerError(f"cannot start bwrap: {e}") from e
        finally:
            theirs.close()
            for fd in fds:
                os.close(fd)
        server = cls(proc, ours)
        try:
            ready = server._receive(time.monotonic() + START_TIMEOUT_S)
        except ForkServerError:
            ready = None
        if not ready or not ready.get("ready"):
            server.close()
            assert proc.stderr is not None
            err = proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
            raise ForkServerError(f"fork server did not start: {err[-1] if err else 'no output'}")
        assert proc.stderr is not None
        proc.stderr.close()
        return server

    @property
    def usable(self) -> bool:
        """Whether the next run may go here (False: retire it, start another)."""
        return self._usable and self._proc.poll() is None

    def run(
        self,
        files: Mapping[str, str],
        argv: Sequence[str],
        limits: Mapping[str, float],
        nproc: int,
        *,
        output_bytes: int,
    ) -> Outcome:
        """One run: ``files`` in its work dir, ``argv`` (``python3 …`` runs in the warm
        interpreter), within ``limits`` (``SandboxLimits`` as a dict) and ``nproc`` processes.

        Raises:
            ForkServerError: the server was gone before the run started (nothing ran).
        """
        wall_s = float(limits["wall_s"])
        payload = json.dumps({"files": dict(files), "argv": list(argv)}).encode()
        memfd = os.memfd_create("sandbox-run", 0)
        out_r, out_w = os.pipe()
        self._runs += 1
        number = self._runs
        job = {"job": number, "size": len(payload), "limits": dict(limits), "nproc": nproc}
        try:
            os.write(memfd, payload)
            socket.send_fds(self._control, [json.dumps(job).encode()], [memfd, out_w])
        except OSError as e:
            os.close(out_r)
            self._usable = False
            raise ForkServerError(f"fork server gone: {e}") from e
        finally:
            os.close(memfd)
            os.close(out_w)
        try:
            return self._collect(out_r, number, wall_s, output_bytes)
        finally:
            os.close(out_r)
            if self._runs >= MAX_RUNS:
                self._usable = False

    def _collect(self, out: int, job: int, wall_s: float, cap: int) -> Outcome:
        """Read the run's output (keeping the tail) until it ends and the server reports it."""
        started = time.monotonic()
        hard = started + wall_s + GRACE_S
        tail = bytearray()
        total = 0
        over = False
        done: dict[str, object] | None = None
        eof = False
        while not (eof and done is not None):
            left = hard - time.monotonic()
            if left <= 0:
                break
            watch = ([] if eof else [out]) + ([] if done is not None else [self._control])
            ready, _, _ = select.select(watch, [], [], min(left, 0.5))
            if out in ready:
                chunk = os.read(out, 65536)
                if not chunk:
                    eof = True
                    continue
                if over:
                    continue
                total += len(chunk)
                tail += chunk
                if len(tail) > cap:
                    del tail[: len(tail) - cap]
                if total > cap:
                    over = True
                    with contextlib.suppress(OSError):
                        self._control.send(json.dumps({"kill": job}).encode())
            if self._control in ready:
                msg = self._receive_now()
                if msg is None:  # the server died under this run: the run killed it
                    self._usable = False
                    done = {"code": -int(signal.SIGKILL), "lost": True}
                elif msg.get("done") == job:
                    done = msg
        if done is None:  # the server stopped answering: kill the whole sandbox
            self.close()
            return -int(signal.SIGKILL), bytes(tail), True, f"timed out after {wall_s:g} s"
        if over or done.get("timed_out") or not done.get("clean", True) or done.get("lost"):
            self._usable = False  # a run that hit a wall, or left what cannot be undone
        code = int(str(done.get("code", -1)))
        if over:
            return code, bytes(tail), False, f"output limit ({cap} bytes)"
        if done.get("timed_out"):
            return code, bytes(tail), True, f"timed out after {wall_s:g} s"
        if done.get("lost"):
            return code, bytes(tail), False, "its sandbox's runner was killed (by the run)"
        return code, bytes(tail), False, ""

    def _receive_now(self) -> dict[str, object] | None:
        try:
            data = self._control.recv(65536)
        except OSError:
            return None
        if not data:
            return None
        parsed = json.loads(data)
        return parsed if isinstance(parsed, dict) else None

    def _receive(self, deadline: float) -> dict[str, object] | None:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([self._control], [], [], max(0.0, left))
        if not ready:
            raise ForkServerError("fork server did not answer in time")
        return self._receive_now()

    def close(self) -> None:
        """Kill the sandbox (server and anything left in it) and reap it. Idempotent: once
        reaped, its process group id may belong to another process, which a second
        ``killpg`` would kill."""
        if self._closed:
            return
        self._closed = True
        self._usable = False
        with contextlib.suppress(OSError):
            self._control.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(5)
