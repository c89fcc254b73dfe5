"""The image holds what Fleet runs: build deploy/Dockerfile's context as Docker would, install it
as the image does, and run the image's own smoke check from outside the checkout.

No Docker daemon is needed: what the image holds is derived from the Dockerfile itself (its
``COPY`` lines from the build context, their stage's ``WORKDIR``) and from its ignore file
(``Dockerfile.dockerignore``, matched with pathspec's gitignore matcher; the file keeps to the
anchored patterns on which gitignore and dockerignore agree, and a test here holds it to that).
The context is copied into a temporary directory, installed into a fresh virtualenv with
``pip install`` (dependencies resolved by pip, from its cache where it has them), and then the
Dockerfile's smoke check ``RUN`` line runs with that virtualenv first on ``PATH``, in a
temporary directory, so nothing of the checkout is importable. A package the wheel misses, a
file of package data left out, a first-party import nobody declared: each fails here as it
would in ``docker build``.

The wheel built from the checkout as git has it (``pip wheel .`` from a clean clone, anywhere but
the image) is held to the product too: its packages are the ones pyproject names, and none of
what only tests and benchmarks import (``fleet_testing``, ``tests``, ``bench``) is in it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
IGNORE = ROOT / "deploy" / "Dockerfile.dockerignore"
SMOKE = re.compile(r"^python3? (-\w+ )*-c ")
"""The smoke check's first step: ``python -c`` (the Dockerfile says what it checks)."""
NOT_INSTALLED = ("*.pyi",)
"""Files in a package that a wheel need not carry: type stubs of generated code."""


@dataclass(frozen=True)
class Instruction:
    stage: str
    keyword: str
    args: str


def instructions(text: str) -> Iterator[Instruction]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped, each tagged
    with its stage (``FROM … AS name``; unnamed stages by their index)."""
    logical, stage, n = "", "", -1
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        keyword, _, args = logical.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            n += 1
            words = args.split()
            stage = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(n)
        yield Instruction(stage, keyword, " ".join(args.split()))
        logical = ""


def ignore_spec() -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(IGNORE.read_text().splitlines())


def context_files() -> list[str]:
    """The build context: every file under the root that the ignore file lets through."""
    return files_kept(ignore_spec())


def files_kept(spec: pathspec.GitIgnoreSpec) -> list[str]:
    """Every file under the root, as a path from it, that ``spec`` does not match (nor a folder of
    it); symbolic links left out."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = Path(dirpath).relative_to(ROOT)
        dirnames[:] = [d for d in dirnames if not spec.match_file(f"{(rel / d).as_posix()}/")]
        out += [
            (rel / f).as_posix()
            for f in filenames
            if not spec.match_file((rel / f).as_posix()) and not (Path(dirpath) / f).is_symlink()
        ]
    return sorted(out)


def build_stage(stage: str, into: Path) -> Path:
    """Lay out ``stage``'s ``COPY`` lines from the build context under ``into``; returns the
    stage's ``WORKDIR`` there (where its ``RUN`` lines run)."""
    files = context_files()
    workdir = "/"
    copies = 0
    for ins in instructions(DOCKERFILE.read_text()):
        if ins.stage != stage:
            continue
        if ins.keyword == "WORKDIR":
            workdir = ins.args
        elif ins.keyword in ("COPY", "ADD") and "--from" not in ins.args:
            *sources, dest = shlex.split(ins.args)
            target = into / Path(workdir, dest).relative_to("/")
            for src in sources:
                prefix = "" if src.strip("/") in ("", ".") else src.strip("/") + "/"
                chosen = [f for f in files if f.startswith(prefix) or f == prefix.rstrip("/")]
                assert chosen, f"{ins.keyword} {src}: nothing in the build context"
                for f in chosen:
                    rel = f[len(prefix) :] if prefix and f != prefix.rstrip("/") else f
                    (target / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / f, target / rel)
            copies += 1
    assert copies, f"stage {stage!r} copies nothing from the build context"
    return into / Path(workdir).relative_to("/")


def wheel_stage() -> str:
    """The one stage that copies from the build context (the others take what it built)."""
    stages = {
        i.stage
        for i in instructions(DOCKERFILE.read_text())
        if i.keyword in ("COPY", "ADD") and "--from" not in i.args
    }
    assert len(stages) == 1, f"one stage copies the build context, found {sorted(stages)}"
    return stages.pop()


def smoke_check() -> str:
    """The image's smoke check: from the ``python … -c`` step of a ``RUN`` line to that line's
    end (``&&``-joined steps), exactly as written there."""
    checks = []
    for ins in instructions(DOCKERFILE.read_text()):
        if ins.keyword != "RUN":
            continue
        steps = [step.strip() for step in ins.args.split("&&")]
        first = next((i for i, x in enumerate(steps) if SMOKE.match(x)), None)
        if first is not None:
            checks.append(" && ".join(steps[first:]))
    assert len(checks) == 1, f"one RUN line with a {SMOKE.pattern!r} step, found {len(checks)}"
    return checks[0]


# ------------------------------------------------------------------------------ static


def test_the_ignore_file_keeps_to_patterns_docker_and_gitignore_read_alike() -> None:
    """Docker anchors every pattern at the context root; gitignore matches a slash-less pattern
    at any depth. Anchored (``/x``) and ``**/x`` patterns mean the same to both."""
    for line in IGNORE.read_text().splitlines():
        p = line.strip().removeprefix("!")
        if p and not line.startswith("#"):
            assert p.startswith(("/", "**/")), f"{IGNORE.name}: {line!r}: anchor it (/x or **/x)"


def test_the_context_holds_every_package_and_no_tests_or_secrets() -> None:
    files = context_files()
    tops = {f.split("/")[0] for f in files}
    assert {"pyproject.toml", "README.md", "fleet", "agent_runtime", "application"} <= tops
    assert not tops & {"tests", "docs", "bench", ".git", ".venv", "fleet_testing"}, tops
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


# ------------------------------------------------------------------------------ built


FRESH_DEPS = os.environ.get("FLEET_IMAGE_TEST_DEPS", "") == "fresh"
"""``FLEET_IMAGE_TEST_DEPS=fresh``: pip resolves and downloads every dependency into the fresh
virtualenv, exactly as ``docker build`` does (about 3.5 minutes here, most of it downloads).
By default the third-party packages come from the environment running the tests (a path entry
after the fresh site-packages, its ``.pth`` hooks not run, so an editable install of the
checkout stays out of reach) and pip still resolves every declared dependency against them;
what is first-party comes from the built context alone (about 20 seconds)."""


def image_extras() -> str:
    """The extras the image installs without build arguments (``extras=…`` in its RUN line);
    "" when it names none."""
    m = re.search(r"\bextras=([\w,]+)", DOCKERFILE.read_text())
    return m.group(1) if m else ""


def _first_party(src: Path) -> set[str]:
    """The top-level package names pyproject's package finder may install."""
    conf = tomllib.loads((src / "pyproject.toml").read_text())
    include = conf["tool"]["setuptools"]["packages"]["find"]["include"]
    return {p.rstrip("*").rstrip(".") for p in include}


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fresh virtualenv with the context installed, the staged source it came from)."""
    tmp = tmp_path_factory.mktemp("image")
    src = build_stage(wheel_stage(), tmp / "ctx")
    env_dir = tmp / "venv"
    args = ["install", "-q", "--disable-pip-version-check"]
    if FRESH_DEPS:
        venv.EnvBuilder(with_pip=True).create(env_dir)
    else:
        # No pip or setuptools of its own: the test environment's, newer, build the wheel.
        venv.EnvBuilder(with_pip=False).create(env_dir)
        ours = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
        shadowing = sorted(n for n in _first_party(src) for d in ours if (Path(d) / n).exists())
        assert not shadowing, (
            f"{shadowing} installed (not editable) in {ours}: they would hide a package the "
            "image lacks; run with FLEET_IMAGE_TEST_DEPS=fresh"
        )
        purelib = Path(_venv_path(env_dir, "purelib"))
        (purelib / "_test_environment.pth").write_text("\n".join(sorted(ours)) + "\n")
        args.append("--no-build-isolation")
    extras = image_extras()
    target = f"{src}[{extras}]" if extras else str(src)
    pip = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", *args, target],
        cwd=tmp, env=_outside_env(env_dir), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return env_dir, src


def _venv_path(env_dir: Path, key: str) -> str:
    return subprocess.run(
        [str(env_dir / "bin" / "python"), "-I", "-c",
         f"import sysconfig; print(sysconfig.get_paths()[{key!r}])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def _outside_env(env_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    return env


@pytest.mark.timeout(900)
def test_the_images_smoke_check_passes_outside_the_checkout(
    image: tuple[Path, Path], tmp_path: Path
) -> None:
    env_dir, _ = image
    done = subprocess.run(
        ["bash", "-ec", smoke_check()],
        cwd=tmp_path, env=_outside_env(env_dir), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    helped = subprocess.run(
        [str(env_dir / "bin" / "fleet"), "--help"],
        cwd=tmp_path, env=_outside_env(env_dir), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert helped.returncode == 0 and "usage: fleet" in helped.stdout, helped.stderr


@pytest.mark.timeout(900)
def test_every_file_of_every_shipped_package_is_installed(image: tuple[Path, Path]) -> None:
    """Package data too (the web console's static files): a file under a package directory in
    the context that the wheel leaves out is one the image lacks."""
    env_dir, src = image
    site = Path(_venv_path(env_dir, "purelib"))
    packages = sorted(p.name for p in src.iterdir() if (p / "__init__.py").is_file())
    assert "fleet" in packages and "application" in packages, packages
    missing = [
        f.relative_to(src).as_posix()
        for pkg in packages
        for f in (src / pkg).rglob("*")
        if f.is_file()
        and not any(f.match(p) for p in NOT_INSTALLED)
        and not (site / f.relative_to(src)).is_file()
    ]
    assert not missing, f"in the context but not installed: {missing}"


def test_python_is_the_images_python_line() -> None:
    """The image's ``PYTHON_VERSION`` is the interpreter these tests install with."""
    arg = next(
        i.args for i in instructions(DOCKERFILE.read_text()) if i.keyword == "ARG"
        and i.args.startswith("PYTHON_VERSION=")
    )  # fmt: skip
    assert arg.split("=", 1)[1] == f"{sys.version_info.major}.{sys.version_info.minor}"


# ------------------------------------------------------------------------------ the wheel

TEST_ONLY = ("fleet_testing", "tests", "bench")
"""Top-level folders that tests and benchmarks import from the repository, never from a wheel."""


def checkout_files() -> list[str]:
    """The checkout as git has it: ``.gitignore`` applied (no virtualenv, caches or builds)."""
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return files_kept(pathspec.GitIgnoreSpec.from_lines([*lines, "/.git/"]))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel of a copy of the checkout, built with the test environment's setuptools."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, out = tmp / "src", tmp / "out"
    for f in checkout_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
         "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(src)],
        cwd=tmp, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("fleet-*.whl")
    return zipfile.ZipFile(path)


@pytest.mark.timeout(300)
def test_the_wheel_holds_no_test_doubles_and_no_tests(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    shipped = sorted(t for t in tops if t in TEST_ONLY)
    assert not shipped, f"the wheel ships what only tests and benchmarks use: {shipped}"
    assert {"fleet", "application", "agent_runtime"} <= tops, sorted(tops)


@pytest.mark.timeout(300)
def test_the_wheels_packages_are_the_ones_pyproject_names(wheel: zipfile.ZipFile) -> None:
    """``top_level.txt`` (what the image's smoke check imports) is exactly the product's packages,
    and every file sits under one of them or the wheel's metadata."""
    (meta,) = {n.split("/")[0] for n in wheel.namelist() if n.split("/")[0].endswith(".dist-info")}
    tops = set(wheel.read(f"{meta}/top_level.txt").decode().split())
    assert tops == _first_party(ROOT), f"top_level.txt {sorted(tops)} is not pyproject's include"
    stray = sorted(n for n in wheel.namelist() if n.split("/")[0] not in tops | {meta})
    assert not stray, f"files outside the product's packages: {stray}"
