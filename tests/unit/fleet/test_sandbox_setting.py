"""``FLEET_SANDBOX``: where candidates' code runs (auto by default, bwrap, off; any case); any
other value is refused naming the variable and the choices, before anything starts. And
``fleet deliberate --tests FILE`` with a file it cannot read is a one-line error naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_runtime.checks.sandbox import SANDBOX_MODES as RUNTIME_MODES
from agent_runtime.checks.sandbox import open_sandbox
from fleet.config import SANDBOX_MODES, ConfigError, Settings


@pytest.mark.parametrize(("raw", "mode"), [(None, "auto"), ("BWRAP", "bwrap"), ("off", "off")])
def test_the_sandbox_mode_is_read(raw: str | None, mode: str) -> None:
    env = {} if raw is None else {"FLEET_SANDBOX": raw}
    assert Settings.from_env(env).sandbox == mode


def test_an_unknown_sandbox_mode_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"FLEET_SANDBOX='docker' must be one of auto, bwrap"):
        Settings.from_env({"FLEET_SANDBOX": "docker"})
    with pytest.raises(ValueError, match=r"FLEET_SANDBOX='docker'"):
        open_sandbox("docker")


def test_the_settings_accept_exactly_what_the_runtime_does() -> None:
    assert SANDBOX_MODES == RUNTIME_MODES


def test_off_runs_nothing_and_says_so() -> None:
    box = open_sandbox("off")
    assert not box.available and "FLEET_SANDBOX=off" in box.reason
    run = box.run({"x.py": "print(1)"}, ["python3", "x.py"])
    assert run.exit_code == -1 and run.reason.startswith("not run: ")


def test_deliberate_with_an_unreadable_tests_file_is_a_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    proc = subprocess.run(
        [sys.executable, "-m", "fleet.cli", "deliberate", "t", "--tests", str(missing),
         "--address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0] and "--tests" in lines[0], proc.stderr
