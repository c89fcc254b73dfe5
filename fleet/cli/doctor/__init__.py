"""What ``fleet doctor`` checks: each part the settings name, as ``fleet up`` would use it.

A check looks at one part (NATS, the model endpoint, the sandbox, Ray, the graph, Valkey, a
running node's API) and says ``ok``, ``warn`` (works, but not as well as it could) or ``fail``
(``fleet up`` or a running node would not work), what it looked at, and for anything not ok the
one thing to change. Settings are read as ``fleet up`` reads them (``Settings.from_env``); where
a part is not configured, a running ``fleet up`` on the same data dir (its ``run.json``) names the
one it started, and otherwise the check says what ``fleet up`` would start.

Checks run concurrently, each bounded by the timeout: a server that does not answer is a failed
check in seconds, never a hung command. Blocking client calls run on daemon threads, so one stuck
in a driver cannot keep the process from exiting either.

A check is an async function from ``Setup`` to ``Finding``; ``CHECKS`` lists them in the order
they are reported, so a new part is one function and one line there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from fleet.cli.doctor._finding import Check, Finding, Setup, Status
from fleet.cli.doctor._local import check_graph, check_ray, check_sandbox
from fleet.cli.doctor._servers import check_api, check_model, check_nats, check_valkey

__all__ = ["CHECKS", "Check", "Finding", "Setup", "Status", "run_checks"]


async def run_checks(setup: Setup, checks: Mapping[str, Check] | None = None) -> list[Finding]:
    """Every check at once; each one's failure (or silence) is its own finding."""
    chosen = CHECKS if checks is None else checks

    async def bounded(name: str, check: Check) -> Finding:
        try:
            # Each check bounds its own calls; this is the backstop for one that does not.
            async with asyncio.timeout(setup.timeout_s * 2 + 1):
                return await check(setup)
        except TimeoutError:
            return Finding(name, Status.FAIL, "", f"no answer within {setup.timeout_s:g} s")
        except Exception as e:  # a check that breaks reports its part, not the command
            return Finding(name, Status.FAIL, "", f"the check failed: {type(e).__name__}: {e}")

    return list(await asyncio.gather(*(bounded(n, c) for n, c in chosen.items())))


CHECKS: Mapping[str, Check] = {
    "nats": check_nats,
    "model": check_model,
    "sandbox": check_sandbox,
    "ray": check_ray,
    "graph": check_graph,
    "valkey": check_valkey,
    "api": check_api,
}
"""Every check, in the order reported."""
