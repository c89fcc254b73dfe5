"""The faults: every few seconds one process is SIGKILLed and started again, as a supervisor
(systemd, Kubernetes) would; and any process that exits on its own is started again too.

Each kill or exit is a ``Fault``, stamped with wall-clock times (``time.time()``) so that it can
be set beside the events' own timestamps, written on the same machine.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass

from bench.soak._system import Member, System, start_until_ready

log = logging.getLogger("soak")


@dataclass
class Fault:
    member: str
    kind: str
    cause: str
    """``SIGKILL``, or ``exited N`` for a process that stopped on its own."""
    at: float
    """When it was killed (or found exited)."""
    spawned_at: float | None = None
    ready_at: float | None = None
    """None: it did not come back within the time allowed."""
    starts: int = 0
    """Starts it took to come back (a process that exits while starting is started again)."""

    @property
    def restart_s(self) -> float | None:
        """From its start to ready again: the process's own start-up."""
        if self.spawned_at is None or self.ready_at is None:
            return None
        return self.ready_at - self.spawned_at


class Chaos:
    """Kills members at random intervals and restarts whatever is down.

    Members are killed in rounds of a fresh random order (one of each kind first), so every one
    is hit as often as the others; one being restarted is skipped, and so is a second nats node
    while one is down (two of three down is an outage by design, not a fault to survive).
    """

    def __init__(
        self,
        system: System,
        *,
        every_s: tuple[float, float],
        rng: random.Random,
        ready_timeout_s: float,
        kinds: frozenset[str],
    ) -> None:
        self.system = system
        self.every_s = every_s
        self.rng = rng
        self.ready_timeout_s = ready_timeout_s
        self.kinds = kinds
        self.faults: list[Fault] = []
        self._restarts: set[asyncio.Task[None]] = set()
        self._order: list[Member] = []

    async def kill_until(self, stop: asyncio.Event) -> None:
        """Kill one member every ``every_s`` seconds (uniform) until ``stop`` is set."""
        while not stop.is_set():
            pause = self.rng.uniform(*self.every_s)
            try:
                await asyncio.wait_for(stop.wait(), timeout=pause)
                return
            except TimeoutError:
                pass
            member = self._next()
            if member is not None:
                self._kill(member)

    def _next(self) -> Member | None:
        candidates = [m for m in self.system.members if m.kind in self.kinds]
        nats_down = any(m.busy for m in candidates if m.kind == "nats")
        for _ in range(2):
            if not self._order:
                self._order = self._round(candidates)
            while self._order:
                m = self._order.pop(0)
                if not m.busy and not (m.kind == "nats" and nats_down):
                    return m
        return None

    def _round(self, candidates: list[Member]) -> list[Member]:
        """Every member once, in random order, one of each kind first: a short run still hits
        every kind of process."""
        kinds = self.rng.sample(
            sorted({m.kind for m in candidates}), len({m.kind for m in candidates})
        )
        first = [self.rng.choice([m for m in candidates if m.kind == k]) for k in kinds]
        rest = [m for m in candidates if m not in first]
        return first + self.rng.sample(rest, len(rest))

    def _kill(self, member: Member) -> None:
        fault = Fault(member.name, member.kind, "SIGKILL", time.time())
        member.busy = True
        member.proc.kill()
        log.info("killed %s", member.name)
        self._restart(member, fault, member.down_s)

    def _restart(self, member: Member, fault: Fault, down_s: float) -> None:
        self.faults.append(fault)
        task = asyncio.create_task(self._bring_back(member, fault, down_s))
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)

    async def _bring_back(self, member: Member, fault: Fault, down_s: float) -> None:
        try:
            if down_s:
                await asyncio.sleep(down_s)
            fault.spawned_at = time.time()
            starts = await start_until_ready(member.proc, self.ready_timeout_s)
            if starts is None:
                log.warning("%s did not come back: see %s", member.name, member.proc.log_path)
            else:
                fault.ready_at, fault.starts = time.time(), starts
        finally:
            member.busy = False

    async def supervise_until(self, stop: asyncio.Event, poll_s: float = 0.5) -> None:
        """Start again any member that exited on its own (not one the chaos is restarting)."""
        while not stop.is_set():
            for m in self.system.members:
                if not m.busy and not m.proc.running():
                    code = m.proc.returncode
                    log.info("%s exited on its own (%s); starting it again", m.name, code)
                    m.busy = True
                    self._restart(m, Fault(m.name, m.kind, f"exited {code}", time.time()), 0.0)
            try:
                await asyncio.wait_for(stop.wait(), timeout=poll_s)
            except TimeoutError:
                pass

    async def settle(self) -> None:
        """Wait for every restart under way (each bounded by the ready timeout)."""
        while self._restarts:
            await asyncio.gather(*list(self._restarts), return_exceptions=True)
