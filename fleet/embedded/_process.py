"""A private server process on a loopback port: start, wait until it answers, stop, kill.

The embedded default and the tests run their own nats-server, redis/valkey-server and llama.cpp
server. Each one listens on a free port on 127.0.0.1 (never a standard port, so it never collides
with a server the machine already runs), can be killed with SIGKILL and restarted on the same port
and data directory, and is always stopped by the process that started it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

LOOPBACK = "127.0.0.1"


_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In the child, before exec: send me ``sig`` when the process that started me dies.

    A private server must not outlive Fleet, not even when Fleet is SIGKILLed (no cleanup code
    runs then). Linux only; elsewhere the normal stop() path is all there is. The signal comes
    when the *thread* that started the child ends: start children from a thread that lives as
    long as the process (the event loop's, or one that does).
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct TCP ports that were free on ``host`` a moment ago.

    Held open together while they are chosen: ``free_port`` called in a row may hand out the same
    port twice (each socket is closed before the next bind), and a cluster of servers then fails
    with "address already in use" on one of its own ports.
    """
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def port_open(host: str, port: int) -> bool:
    """True when something accepts TCP connections on (host, port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


class ServerProcessError(RuntimeError):
    """A private server did not start, or died; the message names it and its log file."""


class ServerProcess:
    """One child server process. Not thread-safe; owned by whoever started it.

    Args:
        name: what to call it in messages ("nats-server").
        argv: the command line.
        port: the port it listens on (already chosen by the caller).
        log_path: where its stdout and stderr go, so a failure message can point at them.
        ready: a check that returns True once the server answers; defaults to "port accepts".
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        port: int,
        log_path: Path,
        ready: Callable[[], bool] | None = None,
        env: dict[str, str] | None = None,
        host: str = LOOPBACK,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.host = host
        self.port = port
        self.log_path = log_path
        self._ready = ready or (lambda: port_open(self.host, self.port))
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """How the last run ended; None while it runs or before it ever did."""
        return None if self._proc is None else self._proc.poll()

    def start(self, *, timeout: float = 30.0) -> None:
        """Start the process and block until it is ready (or raise with the log's tail)."""
        if self.running():
            return
        self.spawn()
        self.wait_ready(timeout=timeout)

    def spawn(self) -> None:
        """Start the process and return at once (``start`` without the wait).

        For a caller on an event loop: the fork happens on its own thread (the die-with-parent
        signal is tied to the thread that forked), and it waits for ``is_ready`` its own way.
        """
        if self.running():
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        env = {**os.environ, **(self._env or {})}
        # A new session, so a Ctrl-C meant for the parent does not kill the child first.
        self._proc = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )
        log.close()

    def is_ready(self) -> bool:
        """True once the running process answers its readiness check (never raises)."""
        if not self.running():
            return False
        with contextlib.suppress(Exception):
            return bool(self._ready())
        return False

    def wait_ready(self, *, timeout: float = 30.0) -> None:
        """Block until the spawned process is ready (or kill it and raise with the log's tail)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                msg = f"{self.name} exited with code {code} on start"
                raise ServerProcessError(f"{msg}; log {self.log_path}:\n{self.log_tail()}")
            if self.is_ready():
                return
            time.sleep(0.05)
        self.kill()
        msg = f"{self.name} not ready on {self.host}:{self.port} after {timeout:.0f} s"
        raise ServerProcessError(f"{msg}; log {self.log_path}:\n{self.log_tail()}")

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``. Idempotent."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGTERM)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL, as a crash would. Idempotent."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.kill()
        self._proc.wait(10)

    def restart(self, *, timeout: float = 30.0) -> None:
        """Start again on the same port and data directory (after stop() or kill())."""
        self.stop()
        self.start(timeout=timeout)

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
