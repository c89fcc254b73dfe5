"""``fleet up --components …`` and ``fleet worker`` as child processes, killable and restartable.

Each child runs the repository's own code (``PYTHONPATH`` first), logs to a file of its own
(appended across restarts, so one file tells a process's whole story), sits in a session of its
own (a Ctrl-C in the caller's terminal is the caller's to handle) and gets SIGTERM if the process
that started it dies, even by SIGKILL. It is ended by its pid only, never by name.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from fleet.embedded._process import die_with_parent

__all__ = ["FLEET", "REPO", "ChildProcess", "FleetProcess", "WorkerProcess", "last_traceback"]

FLEET = str(Path(sys.executable).with_name("fleet"))
"""The ``fleet`` entry point of the running interpreter's environment."""
REPO = Path(__file__).resolve().parents[1]
"""Where this copy of Fleet's packages lives: put first on the children's import path."""


class ChildProcess:
    """One Fleet child process. Not thread-safe; owned by whoever started it.

    ``spawn`` starts it (again, after ``kill``), ``is_ready`` says whether it serves yet,
    a subclass's ``wait_ready`` blocks for that. Subclasses say what to run and what "ready" means.
    """

    name = "fleet"

    def __init__(self, argv: Sequence[str], log_path: Path, env: dict[str, str]) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.env = {**os.environ, **env}
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), self.env.get("PYTHONPATH")) if p
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_offset = 0
        """Size of the log when the current run began: readiness is read after it."""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """How the last run ended; None while it runs or before it ever did."""
        return None if self.proc is None else self.proc.poll()

    def spawn(self) -> None:
        """Start the process (a no-op while it runs) and return at once."""
        if self.running():
            return
        self._before_spawn()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is None or self._log.closed:
            self._log = open(self.log_path, "ab")  # closed in stop()
        self._log.flush()
        self._log_offset = self.log_path.stat().st_size
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )

    def _before_spawn(self) -> None:
        """Clear what a previous run left that would read as "ready"."""

    def is_ready(self) -> bool:
        raise NotImplementedError

    def _wait_ready(self, timeout: float) -> None:
        """Block until ``is_ready`` (or raise with the log's tail if it exits or never is)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                code = self.proc.returncode if self.proc else None
                raise AssertionError(f"{self.name} exited ({code}): {self.tail()}")
            if self.is_ready():
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.name} not ready in {timeout} s: {self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        if self._log is not None and not self._log.closed:
            self._log.flush()
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def last_traceback(self) -> str:
        """The log's last traceback, whole, with the record that logged it and the exception's
        line(s); "" when there is none. For a failure message that names where it failed
        (a log's tail can end past the traceback, and a long one is cut in the middle)."""
        return last_traceback(self.tail(chars=sys.maxsize))

    def output_since_spawn(self) -> str:
        """What the current run wrote, with the console's line wrapping undone."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                return " ".join(f.read().decode(errors="replace").split())
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no clean-up, no goodbye (what a crash looks like). Idempotent."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (a clean stop), SIGKILL after ``timeout``; then close the log. Idempotent."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._log is not None:
            self._log.close()


class FleetProcess(ChildProcess):
    """``fleet up --components <components>`` on a data dir of its own; started at once.

    Ready when it has written ``run.json`` (the last step of a node's start), which is also
    where it says where it listens.
    """

    def __init__(
        self, data_dir: Path, components: str, env: dict[str, str], *, start: bool = True
    ) -> None:
        self.data_dir = data_dir
        self.components = components
        self.name = f"fleet up --components {components}"
        data_dir.mkdir(parents=True, exist_ok=True)
        argv = [FLEET, "up", "--components", components, "--data-dir", str(data_dir)]
        super().__init__(argv, data_dir / "fleet.log", {**env, "FLEET_DATA_DIR": str(data_dir)})
        if start:
            self.spawn()

    def _before_spawn(self) -> None:
        # A SIGKILLed node leaves its run.json behind.
        (self.data_dir / "run.json").unlink(missing_ok=True)

    def run_info(self) -> dict[str, Any] | None:
        """What the running node wrote to ``run.json``, or None before it is ready."""
        try:
            data: dict[str, Any] = json.loads((self.data_dir / "run.json").read_text())
        except (OSError, ValueError):
            return None
        return data if self.proc is not None and data.get("pid") == self.proc.pid else None

    def is_ready(self) -> bool:
        return self.running() and self.run_info() is not None

    def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        """Block until ready; return its ``run.json``."""
        self._wait_ready(timeout)
        info = self.run_info()
        assert info is not None
        return info


class WorkerProcess(ChildProcess):
    """``fleet worker <args>`` (the NATS agent backend), logging to ``log_path``; started at once.

    Ready once it says it is serving (after its consumers exist on the work queue).
    """

    name = "fleet worker"

    def __init__(self, log_path: Path, env: dict[str, str], *args: str, start: bool = True) -> None:
        super().__init__([FLEET, "worker", *args], log_path, env)
        if start:
            self.spawn()

    def is_ready(self) -> bool:
        return self.running() and "worker serving" in self.output_since_spawn()

    def wait_ready(self, timeout: float = 60.0) -> None:
        self._wait_ready(timeout)


_TRACEBACK = "Traceback (most recent call last):"
_LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
"""How a log record starts (``fleet``'s logging format: the time first)."""
_MESSAGE_LINES = 20
"""At most this many lines of an exception's message are kept."""


def last_traceback(log: str) -> str:
    """The last traceback in ``log``: the line before it (the record that logged it), its frames
    and the exception's line(s), up to the next record; "" when ``log`` has none."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(_TRACEBACK)]
    if not starts:
        return ""
    first = max(starts[-1] - 1, 0)
    end = starts[-1] + 1
    while end < len(lines) and lines[end].startswith(" "):  # the frames
        end += 1
    stop = min(end + _MESSAGE_LINES, len(lines))
    while end < stop and lines[end].strip() and not _LOG_RECORD.match(lines[end]):
        end += 1  # the exception and its message (a message may run over several lines)
    return "\n".join(lines[first:end])
