"""Where a benchmark's CPU went: CPU seconds by kind of process over its measured window.

At saturation every figure of a benchmark is CPU per unit of work (the machine is busy), and
which process spends it is what a change must move; a throughput figure alone moves ±10% from
run to run on a shared machine, the CPU of one process per deliberation much less. Read from
``/proc`` (Linux): each process's own time, and for the kinds named so, what its reaped children
spent too (a fork server's finished runs). Only there: a parent reaps a child's whole life at
once (an agent actor its retired sandbox, 500 runs), which would land in the window at random.
A process that ended inside the window is not counted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

__all__ = ["Kind", "Snapshot", "machine_busy_s", "snapshot", "spent_by_kind"]

Kind = tuple[str, Callable[[int, str], bool]]
"""A name, and whether a process (pid, command line) is of that kind: the first that matches."""

_TICK = os.sysconf("SC_CLK_TCK")


Snapshot = dict[int, tuple[float, float, str]]
"""pid → (its own CPU seconds, its reaped children's, its command line)."""


def snapshot() -> Snapshot:
    """Every process now."""
    out: Snapshot = {}
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
        own = int(fields[11]) + int(fields[12])  # utime, stime
        children = int(fields[13]) + int(fields[14])  # cutime, cstime
        name = cmd or stat[stat.find("(") + 1 : stat.rfind(")")]
        out[int(entry)] = (own / _TICK, children / _TICK, name)
    return out


def machine_busy_s() -> float:
    """CPU seconds every core has been busy since boot (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def spent_by_kind(
    before: Mapping[int, tuple[float, float, str]],
    after: Mapping[int, tuple[float, float, str]],
    kinds: Sequence[Kind],
    with_children: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """CPU seconds each kind spent between two snapshots ("other" for the rest), largest first;
    the kinds in ``with_children`` with what their reaped children spent."""
    spent: dict[str, float] = {}
    for pid, (own, children, cmd) in after.items():
        kind = next((name for name, match in kinds if match(pid, cmd)), "other")
        # By pid alone: a Ray worker's command line names the task it runs at the moment.
        was_own, was_children, _ = before.get(pid, (0.0, 0.0, ""))
        delta = own - was_own
        if kind in with_children:
            delta += children - was_children
        if delta <= 0:
            continue
        spent[kind] = spent.get(kind, 0.0) + delta
    return dict(sorted(spent.items(), key=lambda kv: kv[1], reverse=True))
