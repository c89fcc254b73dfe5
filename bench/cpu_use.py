"""Where a benchmark's CPU went: CPU seconds by kind of process over its measured window.

At saturation every figure of a benchmark is CPU per unit of work (the machine is busy), and
which process spends it is what a change must move; a throughput figure alone moves ±10% from
run to run on a shared machine, the CPU of one process per deliberation much less. Read from
``/proc`` (Linux): each process's own time plus what its reaped children spent, so a fork
server's finished runs count for it. A process that ended inside the window is not counted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

__all__ = ["Kind", "machine_busy_s", "snapshot", "spent_by_kind"]

Kind = tuple[str, Callable[[int, str], bool]]
"""A name, and whether a process (pid, command line) is of that kind: the first that matches."""

_TICK = os.sysconf("SC_CLK_TCK")


def snapshot() -> dict[int, tuple[float, str]]:
    """Every process now: pid → (CPU seconds, its own and its reaped children's; command line)."""
    out: dict[int, tuple[float, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        name = cmd or stat[stat.find("(") + 1 : stat.rfind(")")]
        out[int(entry)] = (ticks / _TICK, name)
    return out


def machine_busy_s() -> float:
    """CPU seconds every core has been busy since boot (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def spent_by_kind(
    before: Mapping[int, tuple[float, str]],
    after: Mapping[int, tuple[float, str]],
    kinds: Sequence[Kind],
) -> dict[str, float]:
    """CPU seconds each kind spent between two snapshots ("other" for the rest), largest first."""
    spent: dict[str, float] = {}
    for pid, (cpu, cmd) in after.items():
        # By pid alone: a Ray worker's command line names the task it runs at the moment.
        delta = cpu - before.get(pid, (0.0, ""))[0]
        if delta <= 0:
            continue
        kind = next((name for name, match in kinds if match(pid, cmd)), "other")
        spent[kind] = spent.get(kind, 0.0) + delta
    return dict(sorted(spent.items(), key=lambda kv: kv[1], reverse=True))
