"""A process under a cgroup CPU quota (a pod's CPU limit) sizes its work by the quota.

Each case runs a child process inside a real cgroup of this machine with a quota of half a core
(cgroup v1's ``cpu.cfs_quota_us`` or v2's ``cpu.max``), as the kubelet sets one for
``limits: {cpu: 500m}``, and looks at what a user sees: the budget, the embedded model server's
threads, ``fleet doctor``'s sandbox line. Creating a cgroup needs root and a writable cpu
controller; elsewhere the module is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.cpus import usable_cpus
from fleet.embedded.llm import llama_cpp_available

HALF_A_CORE = (50_000, 100_000)
"""Quota and period in µs: 0.5 of a core, rounded up to 1 for sizing."""


def _cpu_controller() -> tuple[Path, str] | None:
    """The folder new cgroups with a CPU quota can be made in, and the version ("v1"/"v2")."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        point, (fstype, _source, options) = Path(before.split()[4]), after.split()[:3]
        if fstype == "cgroup" and "cpu" in options.split(","):
            if os.access(point, os.W_OK):
                return point, "v1"
        if fstype == "cgroup2" and (point / "cgroup.subtree_control").exists():
            enabled = (point / "cgroup.subtree_control").read_text().split()
            if "cpu" in enabled and os.access(point, os.W_OK):
                return point, "v2"
    return None


@pytest.fixture(scope="module")
def quota_group() -> Iterator[Path]:
    """A fresh cgroup limited to half a core, removed after the module."""
    found = _cpu_controller()
    if os.geteuid() != 0 or found is None:
        pytest.skip("needs root and a writable cgroup cpu controller to make a cgroup")
    parent, version = found
    group = parent / f"fleet-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    quota, period = HALF_A_CORE
    if version == "v1":
        (group / "cpu.cfs_period_us").write_text(str(period))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (group / "cpu.max").write_text(f"{quota} {period}")
    try:
        yield group
    finally:
        group.rmdir()  # every child has exited: run() waits for each


def run(group: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    """``argv`` in ``group`` (the shell joins it, then becomes the command); its stdout."""
    join = f'echo $$ > {group / "cgroup.procs"} && exec "$@"'
    done = subprocess.run(
        ["sh", "-c", join, "sh", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def python(group: Path, code: str) -> str:
    return run(group, sys.executable, "-c", code).strip()


def test_the_budget_is_the_quota_rounded_up(quota_group: Path) -> None:
    got = python(
        quota_group,
        "from agent_runtime.cpus import cpu_budget; b = cpu_budget();"
        "print(b.quota, b.cores, b.affinity)",
    )

    quota, cores, affinity = got.split()
    assert (float(quota), int(cores)) == (0.5, 1)
    assert int(affinity) == len(os.sched_getaffinity(0))  # the affinity alone says all of them
    assert usable_cpus() == len(os.sched_getaffinity(0))  # and outside the group, no quota


@pytest.mark.skipif(not llama_cpp_available(), reason="xllamacpp (the llm extra) not installed")
def test_the_embedded_model_server_runs_one_thread_per_core_of_the_quota(
    quota_group: Path, tmp_path: Path
) -> None:
    got = python(
        quota_group,
        "from pathlib import Path; from fleet.embedded.llm import LlamaServer;"
        f"s = LlamaServer(Path({str(tmp_path)!r}), model_path=Path('model.gguf'));"
        "print(s.argv[s.argv.index('--threads') + 1])",
    )

    assert got == "1"


def test_doctor_says_the_sandbox_is_sized_for_the_quota(quota_group: Path, tmp_path: Path) -> None:
    env = {"FLEET_SANDBOX": "auto", "FLEET_DATA_DIR": str(tmp_path), "FLEET_NATS_URL": ""}
    out = run(quota_group, sys.executable, "-m", "fleet.cli", "doctor", "--json", env=env)

    sandbox = next(c for c in json.loads(out)["checks"] if c["name"] == "sandbox")
    assert sandbox["status"] == "ok", sandbox
    assert sandbox["detail"].endswith(
        f"runs at once for 1 core (cgroup quota 0.5 of {len(os.sched_getaffinity(0))})"
    ), sandbox
