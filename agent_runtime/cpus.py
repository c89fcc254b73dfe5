"""The cores this process may keep busy: its CPU affinity, lowered by its cgroup's CPU quota.

``os.cpu_count()`` is the machine's count. In a Kubernetes pod with ``limits: {cpu: 2}`` on a
64-core node it says 64, and so does ``os.sched_getaffinity`` (a CPU limit is a CFS quota, not a
CPU set): sizing sandbox slots, the model server's threads or Ray's worker pool by it starts dozens
of busy threads or processes that the quota then throttles in turn, every 100 ms period. The
quota is read the way the JVM and Go's ``automaxprocs`` read it: from the process's own cgroup
(``/proc/self/cgroup``, found through ``/proc/self/mountinfo``), on cgroup v2 (``cpu.max``) and
v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), the smallest limit from the process's cgroup
up to the mount's root, rounded up to whole cores (1.5 cores keep two threads busy).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuBudget", "cgroup_cpu_quota", "cpu_budget", "usable_cpus"]


@dataclass(frozen=True)
class CpuBudget:
    """What bounds this process's cores: the affinity's count and the cgroup quota, if any."""

    affinity: int
    quota: float | None

    @property
    def cores(self) -> int:
        """Whole cores to size work by: the affinity, lowered to the quota rounded up (≥ 1)."""
        if self.quota is None:
            return self.affinity
        return max(1, min(self.affinity, math.ceil(self.quota)))

    def describe(self) -> str:
        """One phrase for a report: ``2 cores`` or ``1 core (cgroup quota 0.5 of 2)``."""
        noun = "core" if self.cores == 1 else "cores"
        if self.quota is None or self.quota >= self.affinity:
            return f"{self.cores} {noun}"
        return f"{self.cores} {noun} (cgroup quota {self.quota:g} of {self.affinity})"


def _mounts(mountinfo: str) -> list[tuple[str, Path, str, str]]:
    """``(root, mount point, fstype, super options)`` of each cgroup mount in ``mountinfo``."""
    found = []
    for line in mountinfo.splitlines():
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((fields[3], Path(fields[4]), tail[0], tail[2]))
    return found


def _memberships(cgroup: str) -> list[tuple[str, str]]:
    """``(controllers, path)`` of each line of ``/proc/self/cgroup`` (v2's controllers are "")."""
    found = []
    for line in cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            found.append((parts[1], parts[2]))
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _v2_limit(folder: Path) -> float | None:
    text = _read(folder / "cpu.max")
    if text is None:
        return None
    quota, _, period = text.strip().partition(" ")
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return int(quota) / int(period)


def _v1_limit(folder: Path) -> float | None:
    quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _folders(mount_root: str, mount_point: Path, path: str) -> list[Path]:
    """The cgroup's folder under ``mount_point`` and each parent up to the mount point."""
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root) :]
    elif mount_root != "/":
        # Outside what the mount shows (a namespace's view): the mount point is ours.
        path = "/"
    here = mount_point / path.lstrip("/")
    folders = [here]
    while here != mount_point and mount_point in here.parents:
        here = here.parent
        folders.append(here)
    return folders


def cgroup_cpu_quota(cgroup: str, mountinfo: str, root: Path = Path("/")) -> float | None:
    """The CPU quota in cores of the cgroup ``cgroup`` names, or None where nothing limits it.

    ``cgroup`` and ``mountinfo`` are the texts of ``/proc/self/cgroup`` and
    ``/proc/self/mountinfo``; ``root`` prefixes every mount point (a test's copy of the tree).
    """
    limits: list[float] = []
    memberships = _memberships(cgroup)
    for mount_root, point, fstype, options in _mounts(mountinfo):
        where = root / point.relative_to("/")
        for controllers, path in memberships:
            if fstype == "cgroup2" and controllers == "":
                limit = _v2_limit
            elif fstype == "cgroup" and "cpu" in {*controllers.split(",")} & {*options.split(",")}:
                limit = _v1_limit
            else:
                continue
            limits += [q for f in _folders(mount_root, where, path) if (q := limit(f)) is not None]
    return min(limits) if limits else None


def cpu_budget() -> CpuBudget:
    """This process's :class:`CpuBudget`, read now (affinity and cgroups can change under it)."""
    affinity = len(os.sched_getaffinity(0))
    cgroup, mountinfo = _read(Path("/proc/self/cgroup")), _read(Path("/proc/self/mountinfo"))
    quota = cgroup_cpu_quota(cgroup, mountinfo) if cgroup and mountinfo else None
    return CpuBudget(affinity=affinity, quota=quota)


def usable_cpus() -> int:
    """Whole cores this process may keep busy (see the module's docstring)."""
    return cpu_budget().cores
