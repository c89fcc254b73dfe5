"""Rules the repository keeps: generated stubs match the .proto, imports follow the layers."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.embedded.neo4j import fleet_cache_dir
from fleet.protogen import generate

ROOT = Path(__file__).resolve().parents[3]
GENERATED = ROOT / "fleet" / "orchestrator" / "v1"


def test_committed_grpc_stubs_match_the_proto_sources(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    generate(ROOT, tmp_path)
    fresh = tmp_path / "fleet" / "orchestrator" / "v1"
    for name in ("orchestrator_pb2.py", "orchestrator_pb2.pyi", "orchestrator_pb2_grpc.py"):
        assert filecmp.cmp(fresh / name, GENERATED / name, shallow=False), (
            f"{name} is stale: run `make proto` and commit the result"
        )


def test_import_layers_hold() -> None:
    out = subprocess.run(
        [_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


@pytest.mark.timeout(300)
def test_the_code_is_mypy_strict_clean() -> None:
    """Every package and the benchmarks (the generated gRPC code is checked where it is used)."""
    pkgs = [
        "aggregates",
        "natsio",
        "lifecycle",
        "application",
        "eventstore",
        "dispatchers",
        "projectors",
        "agent_runtime",
        "fleet",
        "fleet_testing",
    ]
    pkgs.append("bench")
    pkgs.append("tests/support/doubles.py")  # the ports' test doubles: a missing method fails
    out = subprocess.run(
        [_tool("mypy"), *pkgs],
        cwd=ROOT,
        env={**os.environ, "MYPY_CACHE_DIR": _mypy_cache()},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:]


def _mypy_cache() -> str:
    """mypy's cache for every checkout on this machine (``MYPY_CACHE_DIR`` if set, else
    ``${XDG_CACHE_HOME:-~/.cache}/fleet/mypy``, beside the Neo4j jars). A fresh clone's check
    takes ~35 s of two cores without it and ~2 s with it; mypy re-checks what a file's hash
    says has changed, whichever clone or virtualenv wrote the cache."""
    if os.environ.get("MYPY_CACHE_DIR", "").strip():
        return os.environ["MYPY_CACHE_DIR"]
    return str(fleet_cache_dir() / "mypy")


def test_ruff_is_clean() -> None:
    out = subprocess.run(
        [_tool("ruff"), "check", "--output-format", "concise", "."],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:]
