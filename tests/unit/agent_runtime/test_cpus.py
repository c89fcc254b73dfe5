"""The CPU budget read from cgroup files: v1 and v2, nested limits, a namespace's view.

Each case writes the files a kernel would show into a folder and points the reader at it; the
real kernel's view is in ``tests/integration/agent_runtime/test_cpu_quota.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_runtime.cpus import CpuBudget, cgroup_cpu_quota

V1_MOUNTS = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTS = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def _write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_v2_takes_the_smallest_limit_from_the_process_cgroup_up(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n")
    _write(tmp_path, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n")
    _write(tmp_path, "/sys/fs/cgroup/kubepods/pod1/app/cpu.max", "max 100000\n")

    quota = cgroup_cpu_quota("0::/kubepods/pod1/app\n", V2_MOUNTS, tmp_path)

    assert quota == 1.5


def test_v2_without_any_limit_is_none(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/fs/cgroup/cpu.max", "max 100000\n")  # a namespace's root

    assert cgroup_cpu_quota("0::/\n", V2_MOUNTS, tmp_path) is None


def test_v2_in_a_container_whose_mount_is_its_own_cgroup(tmp_path: Path) -> None:
    # No cgroup namespace: /proc/self/cgroup names the host's path, the mount's root is it.
    mounts = "29 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"
    _write(tmp_path, "/sys/fs/cgroup/cpu.max", "50000 100000\n")

    assert cgroup_cpu_quota("0::/docker/abc\n", mounts, tmp_path) == 0.5


def test_v1_reads_the_cpu_hierarchy_only(tmp_path: Path) -> None:
    cgroup = "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n"
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "300000\n")
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n")
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    # The memory hierarchy has files of the same names, which must not count.
    _write(tmp_path, "/sys/fs/cgroup/memory/job/cpu.cfs_quota_us", "10000\n")
    _write(tmp_path, "/sys/fs/cgroup/memory/job/cpu.cfs_period_us", "100000\n")

    assert cgroup_cpu_quota(cgroup, V1_MOUNTS, tmp_path) == 3.0


def test_v1_unlimited_is_none(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    _write(tmp_path, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")

    assert cgroup_cpu_quota("3:cpu,cpuacct:/\n", V1_MOUNTS, tmp_path) is None


def test_missing_or_garbled_files_are_no_limit(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/fs/cgroup/a/cpu.max", "lots 100000\n")

    assert cgroup_cpu_quota("0::/a\n", V2_MOUNTS, tmp_path) is None
    assert cgroup_cpu_quota("0::/b\n", V2_MOUNTS, tmp_path) is None
    assert cgroup_cpu_quota("", "", tmp_path) is None


@pytest.mark.parametrize(
    ("affinity", "quota", "cores", "said"),
    [
        (2, None, 2, "2 cores"),
        (64, 2.0, 2, "2 cores (cgroup quota 2 of 64)"),
        (64, 1.5, 2, "2 cores (cgroup quota 1.5 of 64)"),
        (2, 0.5, 1, "1 core (cgroup quota 0.5 of 2)"),
        (2, 8.0, 2, "2 cores"),
        (1, None, 1, "1 core"),
    ],
)
def test_cores_are_the_affinity_lowered_to_the_quota_rounded_up(
    affinity: int, quota: float | None, cores: int, said: str
) -> None:
    budget = CpuBudget(affinity=affinity, quota=quota)

    assert budget.cores == cores
    assert budget.describe() == said
