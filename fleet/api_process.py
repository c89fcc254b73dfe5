"""The gRPC API in a process of its own, started and stopped by the node that runs the rest
(``FLEET_API_PROCESS=child``).

Why a process: in one ``fleet up`` the API's event loop shares the interpreter lock with the
projections' threads, and under a burst of submits a call waits for that lock before its handler
runs, as long as it waits for a CPU (``docs/journal.md``, 2026-11-28). In a process of its own the
loop has the lock to itself: that is how ``deploy/`` runs the API (the fleet-api Deployment), and
this gives one ``fleet up`` the same form with one setting.

The child is ``fleet up --components api`` on this node's servers: the same event store and
cache, the model this node's agents call (for GetStatus), and the graph through this node's
projections (``projectors.service``) unless it can open the configured Neo4j itself. It answers
as the deployed API does: DeriveSubtasks' turns, and whether the checks' sandbox starts, come
from this node's agents over NATS (``agent_runtime.nats_backend.turns``). What it says of the
node is the node's: GetNodeStatus shows the node's endpoints (``FLEET_NODE_ENDPOINTS``), and the
node's ``/metrics`` carries the child's own figures (``FleetMetrics.include``).

Start: the node launches the child before anything else (``launch``), so that its imports, most
of its start, overlap the node's; the child then waits for its environment on stdin, sent once
the node's servers are up (``start``, ``receive_environment``). Meanwhile the node holds the API
port (health NOT_SERVING, ``PortHold``); the child binds the port beside it (``SO_REUSEPORT``)
and the node lets go once the child serves, so the port never refuses a connection.

Lifetimes are tied both ways. The child is SIGKILLed by the kernel when this process dies, even
by SIGKILL (``PR_SET_PDEATHSIG``): it holds nothing a clean stop would save, the events are in
the store, and the port is free at once for the node's next start. A child that exits on its own
is started again (it keeps no state: the port and the work are where they were), so an API
crash costs a second of that API, not a restart of the node's agents and servers. One that keeps
exiting (more than ``RESTARTS`` times in ``RESTART_WINDOW_S``) is a failure of this node
(``FleetNode.failure``), which ``fleet up`` turns into exit 1 for its supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from fleet.config import Settings
from fleet.embedded._process import die_with_parent, free_port
from fleet.endpoints import RUN_FILE, Endpoints, read_run_file

__all__ = ["ApiProcess", "ApiProcessExited", "PortHold", "api_process_for", "child_environment"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 120.0
"""How long the child may take to serve (its imports, the event store, the councils' fold)."""
STOP_TIMEOUT_S = 30.0
"""A clean stop's bound: the API's grace for calls in flight, then its parts; SIGKILL after."""
RESTARTS = 5
RESTART_WINDOW_S = 60.0
"""More than ``RESTARTS`` exits within this many seconds: the child is not started again."""
RESTART_DELAY_S = 0.5
"""Between an exit and the next start: a child failing at once does not spin a core."""

_SET_HERE = (
    "FLEET_NATS_URL",
    "NATS_URL",
    "FLEET_VALKEY_URL",
    "VALKEY_URL",
    "REDIS_URL",
    "FLEET_VLLM_URL",
    "VLLM_URL",
    "FLEET_VLLM_MODEL",
    "VLLM_MODEL",
    "FLEET_RAY_ADDRESS",
    "RAY_ADDRESS",
)
"""Where-is-it names the child must read from this node's endpoints, not from the environment
this node was given (which may name none: then this node started the server)."""


class PortHold(Protocol):
    """The node listening on the API port until its child serves it (health NOT_SERVING, every
    RPC UNAVAILABLE): a probe tells "starting" from "down", and no connection is refused."""

    async def close(self) -> None: ...


class ApiProcessExited(RuntimeError):
    """The API's process failed to start, or kept exiting: its calls have nowhere to go."""


def child_environment(
    settings: Settings, endpoints: Endpoints, base: Mapping[str, str]
) -> dict[str, str]:
    """The environment of ``fleet up --components api`` beside this node: ``base`` (this
    process's, so tokens, TLS, councils and limits carry over) with this node's servers and the
    settings this node may have taken from flags."""
    s = settings
    env = {k: v for k, v in base.items() if k not in _SET_HERE}
    env.update(
        FLEET_COMPONENTS="api",
        FLEET_API_PROCESS="inline",
        FLEET_DATA_DIR=str(s.data_dir / "api"),
        FLEET_NATS_URL=endpoints.nats_url,
        FLEET_STREAM=s.stream,
        FLEET_STREAM_REPLICAS=str(s.stream_replicas),
        FLEET_CACHE="on" if s.cache_enabled and endpoints.valkey_url else "off",
        FLEET_GRAPH=s.graph,
        FLEET_GRPC_HOST=s.grpc_host,
        # The port the node holds while the child starts (a free one it took for port 0).
        FLEET_GRPC_PORT=endpoints.grpc.rsplit(":", 1)[1] if endpoints.grpc else str(s.grpc_port),
        FLEET_NODE_ENDPOINTS=json.dumps(vars(endpoints)),
        # Its own per-call figures on a loopback port the node's /metrics reads (``include``).
        FLEET_METRICS_HOST="127.0.0.1",
        FLEET_METRICS_PORT=str(free_port()) if endpoints.metrics else "0",
        FLEET_LLM_MAX_TOKENS=str(s.llm_max_tokens),
        FLEET_AGENT_CALL_TIMEOUT=str(s.agent_call_timeout),
    )
    if endpoints.valkey_url:
        env["FLEET_VALKEY_URL"] = endpoints.valkey_url
    if endpoints.llm_url:
        env["FLEET_VLLM_URL"] = endpoints.llm_url
        env["FLEET_VLLM_MODEL"] = endpoints.model
    return env


ENV_FROM_STDIN = "FLEET_ENV_FROM_STDIN"
"""Set in a child started ahead of its settings (``ApiProcess.launch``): its ``fleet up`` imports
Fleet, then reads the environment to run with as one JSON line on stdin
(``receive_environment``)."""


async def receive_environment() -> None:
    """In ``fleet up``, after its imports: when started ahead of its settings, wait for them on
    stdin and run with them. A node that started this process and went away before sending them
    ends it (ConnectionAbortedError: the CLI's one line, exit 1)."""
    if os.environ.pop(ENV_FROM_STDIN, None) != "1":
        return
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line.strip():
        raise ConnectionAbortedError("the node that started this API process went away")
    os.environ.update(json.loads(line))


def _argv() -> list[str]:
    """This interpreter running Fleet's CLI: the same code and environment as this node."""
    return [sys.executable, "-m", "fleet", "up", "--components", "api"]


class ApiProcess:
    """One ``fleet up --components api`` child: ``start`` waits until it serves, ``close``
    stops it; one that exits on its own is started again, and ``background_tasks`` ends (with
    ``ApiProcessExited``) once it has exited more than ``RESTARTS`` times in a window.

    Loop affinity: start and close on the node's loop, from its thread (the kernel's death
    signal follows the thread that started the child, and the loop's lives as long as the
    process).
    """

    def __init__(
        self,
        base: Mapping[str, str],
        data_dir: Path,
        *,
        held: PortHold | None = None,
        hold: Callable[[], Awaitable[PortHold]] | None = None,
    ) -> None:
        self._base = {k: v for k, v in base.items() if k not in _SET_HERE}
        self._base.update({ENV_FROM_STDIN: "1", "FLEET_COMPONENTS": "api"})
        self._env: dict[str, str] = {}
        """What the child runs with (``start``), sent on its stdin once it has its imports."""
        self._data_dir = data_dir
        self._held = held
        """The node's hold on the port (opened at the node's start), released once the child
        serves; ``hold`` takes it again while a child that exited is started anew."""
        self._hold = hold
        self._proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self.run_info: dict[str, Any] = {}
        """The child's ``run.json`` once it serves: where it listens (``grpc``), its ``pid``."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def launch(self) -> None:
        """Start the child's interpreter now: it imports Fleet (seconds on a small machine)
        while the node starts its servers, then waits for ``start`` to send its settings."""
        self._data_dir.mkdir(parents=True, exist_ok=True)
        (self._data_dir / RUN_FILE).unlink(missing_ok=True)  # a SIGKILLed child's
        self._proc = await asyncio.create_subprocess_exec(
            *_argv(),
            env=self._base,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # its banner; its log lines go to stderr, with ours
            start_new_session=True,  # signals are this node's to pass on, not a terminal's
            preexec_fn=(
                functools.partial(die_with_parent, signal.SIGKILL)
                if sys.platform == "linux"
                else None
            ),
        )
        log.info("gRPC API starting in its own process (pid %d)", self._proc.pid)

    async def start(
        self, env: Mapping[str, str], timeout: float = START_TIMEOUT_S
    ) -> dict[str, Any]:
        """Run the child with ``env`` (launched now unless ``launch`` did) and return its
        ``run.json`` once it serves (the last step of its start); raise ``ApiProcessExited``
        if it exits first, TimeoutError if it never serves. From then on it is watched, and
        started again when it exits."""
        self._env = {k: v for k, v in env.items() if k != ENV_FROM_STDIN}
        info = await self._spawn(timeout)
        self._watch = asyncio.create_task(self._supervise(timeout), name="api-process")
        return info

    async def _spawn(self, timeout: float) -> dict[str, Any]:
        if self._held is None and self._hold is not None:
            try:
                self._held = await self._hold()
            except Exception as e:  # a taken port: the child says so as it fails
                log.warning("the API port is not held while its process restarts: %s", e)
        if self._proc is None or self._proc.returncode is not None or self._proc.stdin is None:
            await self.launch()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(self._env).encode() + b"\n")
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it exited: said below, with its exit status
        proc.stdin = None  # sent: the next start launches a new one
        deadline = time.monotonic() + timeout
        while True:
            info = read_run_file(self._data_dir)
            if info is not None and info.get("pid") == proc.pid:
                self.run_info = info
                break
            if proc.returncode is not None:
                raise ApiProcessExited(f"the API's process exited ({proc.returncode}) at start")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the API's process did not serve in {timeout:.0f} s")
            await asyncio.sleep(0.05)  # the loop's child watcher sets returncode when it exits
        await self._release()
        return self.run_info

    async def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held.close()

    async def _supervise(self, timeout: float) -> None:
        """Start the child again each time it exits; raise once it exits too often."""
        exits: list[float] = []
        while True:
            proc = self._proc
            assert proc is not None
            code = await proc.wait()
            now = time.monotonic()
            exits = [t for t in exits if now - t < RESTART_WINDOW_S] + [now]
            if len(exits) > RESTARTS:
                raise ApiProcessExited(
                    f"fleet up --components api exited {len(exits)} times in "
                    f"{RESTART_WINDOW_S:.0f} s (the last, pid {proc.pid}, with {code}): "
                    "not started again"
                )
            log.warning("the API's process (pid %d) exited (%s): starting it again", proc.pid, code)
            await asyncio.sleep(RESTART_DELAY_S)
            try:
                await self._spawn(timeout)
                log.info("the API's process serves again (pid %s)", self.pid)
            except ApiProcessExited:
                continue  # counted as the loop waits on it again, at once
            except TimeoutError:
                stuck = self._proc  # never served: end it, and count it
                if stuck is not None:
                    with contextlib.suppress(ProcessLookupError):
                        stuck.kill()

    def background_tasks(self) -> Sequence[asyncio.Task[None]]:
        return [self._watch] if self._watch is not None else []

    async def close(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (the API's graceful stop), SIGKILL after ``timeout``. Idempotent."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, ApiProcessExited):
                await self._watch
        await self._release()
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            log.warning("the API's process did not stop in %.0f s: killed", timeout)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def api_process_for(
    settings: Settings,
    *,
    held: PortHold | None = None,
    hold: Callable[[], Awaitable[PortHold]] | None = None,
) -> ApiProcess:
    """The child for a node with these settings (``launch`` it early, ``start`` it with
    ``child_environment`` once the node's servers are up); with ``held``, the node's hold on the
    port, which the child takes over."""
    return ApiProcess(os.environ, settings.data_dir / "api", held=held, hold=hold)
