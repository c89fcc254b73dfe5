"""What GetStatus's status word stands on: probes of the parts this node reaches, cached briefly.

"healthy" means reachable, not merely "this process is up". Each probe asks one part and says
what is wrong with it, if anything:

* the event store: the stream's head read through the node's recorder (JetStream); without it
  nothing can be recorded, so the node is **unhealthy**;
* the model endpoints: ``GET <url>/v1/models`` on the node's endpoint and every council's own
  (an OpenAI-compatible server answers it cheaply); none reachable is **unhealthy** (no agent
  can answer), some is **degraded** (the councils on the others still work);
* the sandbox, where this node runs the checks: asked for (``auto``, ``bwrap``) and unable to
  start is **degraded** (deliberations finish, but DEV code is not run: its checks say "not run");
  ``FLEET_SANDBOX=off`` is the operator's choice and no problem;
* anything else a probe reports (a council without members, the statistics fold stopped) is
  **degraded**.

Probes run at most once per ``ttl_s`` (3 s by default), however often GetStatus is called, and
concurrent callers share one round; each probe has its own time limit, so a part that hangs
reads as unreachable within seconds instead of stalling the answer. A change therefore shows
within ``ttl_s`` plus one probe's time limit.

Loop affinity: one event loop (the API's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import aiohttp

__all__ = [
    "DEGRADED",
    "HEALTHY",
    "UNHEALTHY",
    "Health",
    "NodeHealth",
    "Probe",
    "Problem",
    "model_endpoints_probe",
]

HEALTHY = "healthy"
DEGRADED = "degraded"
UNHEALTHY = "unhealthy"


@dataclass(frozen=True)
class Problem:
    """One thing wrong: what and why (``text``), and whether the node can still do its work."""

    text: str
    critical: bool = False


Probe = Callable[[], Awaitable[Sequence[Problem]]]
"""Asks one part; returns what is wrong with it (nothing: it answers)."""


@dataclass(frozen=True)
class Health:
    status: str
    """``healthy``, ``degraded`` or ``unhealthy``."""
    problems: tuple[str, ...]


class NodeHealth:
    """The node's probes, run together at most every ``ttl_s`` seconds (module docstring)."""

    def __init__(
        self,
        probes: dict[str, Probe],
        *,
        ttl_s: float = 3.0,
        probe_timeout_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probes = dict(probes)
        self._ttl_s = ttl_s
        self._timeout_s = probe_timeout_s
        self._clock = clock
        self._last: tuple[float, Health] | None = None
        self._round: asyncio.Task[Health] | None = None

    async def check(self) -> Health:
        """The latest round's answer when it is younger than ``ttl_s``, else a new round."""
        last = self._last
        if last is not None and self._clock() - last[0] < self._ttl_s:
            return last[1]
        if self._round is None or self._round.done():
            self._round = asyncio.create_task(self._probe_all(), name="node-health")
        return await asyncio.shield(self._round)

    async def _probe_all(self) -> Health:
        found = await asyncio.gather(*(self._one(n, p) for n, p in self._probes.items()))
        problems = [p for ps in found for p in ps]
        if any(p.critical for p in problems):
            status = UNHEALTHY
        elif problems:
            status = DEGRADED
        else:
            status = HEALTHY
        health = Health(status, tuple(p.text for p in problems))
        self._last = (self._clock(), health)
        return health

    async def _one(self, name: str, probe: Probe) -> Sequence[Problem]:
        """A probe's problems; one that fails or runs past its time is a critical problem."""
        try:
            return await asyncio.wait_for(probe(), self._timeout_s)
        except TimeoutError:
            return [Problem(f"{name}: no answer within {self._timeout_s:g} s", critical=True)]
        except (OSError, RuntimeError, ConnectionError) as e:
            return [Problem(f"{name}: {type(e).__name__}: {e}"[:300], critical=True)]


def model_endpoints_probe(
    urls: Callable[[], Awaitable[Sequence[str]]], *, timeout_s: float = 1.5
) -> Probe:
    """A probe of the model endpoints ``urls()`` names: each must answer ``GET /v1/models``
    (any status below 500). None reachable is critical; some is not."""

    async def probe() -> Sequence[Problem]:
        targets = sorted({u.rstrip("/") for u in await urls() if u})
        if not targets:
            return [Problem("model endpoints: none configured", critical=True)]
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            down = [
                why
                for why in await asyncio.gather(*(_reach(session, u) for u in targets))
                if why is not None
            ]
        return [Problem(why, critical=len(down) == len(targets)) for why in down]

    return probe


async def _reach(session: aiohttp.ClientSession, base: str) -> str | None:
    """None when ``base`` answers; else what is wrong with it."""
    root = base.removesuffix("/chat/completions")
    url = root if root.endswith("/v1") else f"{root}/v1"
    try:
        async with session.get(f"{url}/models") as r:
            if r.status >= 500:
                return f"model endpoint {base}: HTTP {r.status}"
            return None
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        return f"model endpoint {base}: unreachable ({type(e).__name__}: {e})"[:300]
