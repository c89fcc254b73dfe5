"""The cyclic collector's policy for a long-running Fleet process, once it has started.

Everything a process allocates while it starts (modules, Ray, gRPC, aiohttp, caches) lives as
long as the process. With Python's thresholds the collector makes a young pass every 700
allocations and a full pass, over all of it, every hundred young ones: pauses of 20-50 ms in a
node with a cache of aggregates, 3-16 ms in an agent actor, with the whole interpreter stopped.
``tune_collector`` freezes what start-up allocated out of every pass and makes young passes
rarer. Reference counting still frees everything without a cycle at once; only cyclic garbage
waits longer.
"""

from __future__ import annotations

import gc

__all__ = ["GC_THRESHOLDS", "tune_collector"]

GC_THRESHOLDS = (50_000, 20, 100)
"""The collector's thresholds once a process is up (Python's are 700, 10, 10).

In one ``fleet up`` under a burst of submits (``bench/burst_bench.py --layout one``) these took
submit p99 from 63-107 to 37-79 ms, alternated on one machine."""


def tune_collector() -> None:
    """Once the process is up: keep what start-up allocated out of the collector's passes,
    and collect young objects less often (``GC_THRESHOLDS``)."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
