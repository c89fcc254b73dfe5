"""Fleet processes for multi-process tests: `fleet up --components …` children on one nats-server.

Each child gets its own data dir and is stopped (or SIGKILLed) by the test that started it;
``stop_all`` ends whatever is left, by process id only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.waiting import eventually_sync

FLEET = str(Path(sys.executable).with_name("fleet"))
REPO = Path(__file__).resolve().parents[2]


class ChildProcess:
    """A ``fleet`` command as a child process in its own session, logging to one file, ended by
    its pid only."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self.log = open(log_path, "ab")  # closed in stop()
        self.proc = subprocess.Popen(
            argv, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def tail(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        """SIGKILL: no clean-up, no goodbye (what a crash looks like)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


class FleetProcess(ChildProcess):
    """``fleet up --components …`` with a data dir of its own."""

    def __init__(self, data_dir: Path, components: str, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.components = components
        data_dir.mkdir(parents=True, exist_ok=True)
        full = {**os.environ, **env, "FLEET_DATA_DIR": str(data_dir)}
        full["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full.get("PYTHONPATH")) if p)
        (data_dir / "run.json").unlink(missing_ok=True)
        argv = [FLEET, "up", "--components", components, "--data-dir", str(data_dir)]
        super().__init__(argv, full, data_dir / "fleet.log")

    def wait_ready(self, timeout: float = 60.0) -> dict[str, str]:
        run = self.data_dir / "run.json"

        def ready() -> dict[str, str] | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.components} exited: {self.tail()}")
            data: dict[str, str] = json.loads(run.read_text())  # written whole once ready
            return data

        return eventually_sync(
            ready,
            timeout=timeout,
            interval=0.1,
            what=lambda: f"{self.components} not ready: {self.tail()}",
            ignoring=(FileNotFoundError, ValueError),
        )


# Where agent calls run: warm Ray actors (each dispatcher process starts its own local Ray), the
# same council code in the dispatcher's process, or the NATS work queue with workers (killed
# together with the dispatcher).
BACKENDS = {
    "ray": {"FLEET_AGENT_RUNTIME": "ray", "FLEET_AGENT_BACKEND": "ray"},
    "in-process": {"FLEET_AGENT_RUNTIME": "local"},
    "nats": {"FLEET_AGENT_BACKEND": "nats", "FLEET_WORKER_ACK_WAIT": "2"},
}


def dispatcher_env(
    nats_url: str, stream: str, llm_url: str, backend: str = "in-process", **extra: str
) -> dict[str, str]:
    """The settings of a dispatcher process against the load generator at ``llm_url``, its agent
    calls on ``backend``; ``extra`` adds or overrides settings."""
    return {
        "NATS_URL": nats_url,
        "FLEET_STREAM": stream,
        "FLEET_VLLM_URL": llm_url,
        "FLEET_VLLM_MODEL": "loadgen",
        "FLEET_WORK_LEASE": "2",
        "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off",
        **BACKENDS[backend],
        **extra,
    }
