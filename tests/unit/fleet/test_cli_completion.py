"""``fleet completion bash|zsh``: the scripts, loaded in a real shell, complete what the parser
holds: commands, subcommands, the flags of the command typed so far and a flag's choices."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.cli import build_parser
from fleet.cli.completion import script

pytestmark = pytest.mark.timeout(60)


def _zsh() -> str:
    found = shutil.which("zsh")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("zsh is not installed on CI (apt-get install zsh)")
        pytest.skip("zsh is not installed (apt-get install zsh)")
    return found


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "fleet.bash"
    path.write_text(script(build_parser(), "bash"))
    return path


def _bash_complete(script_path: Path, *words: str) -> list[str]:
    """What TAB offers after ``words`` (the last one is the word being completed)."""
    driver = f"""
source {script_path}
complete -p fleet | grep -q -- '-F _fleet' || {{ echo "not registered" >&2; exit 3; }}
COMP_WORDS=({" ".join(f"'{w}'" for w in words)})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_fleet
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_a_command_from_its_prefix(bash_script: Path) -> None:
    assert _bash_complete(bash_script, "fleet", "del") == ["deliberate"]


def test_bash_completes_the_flags_of_the_command_typed(bash_script: Path) -> None:
    assert _bash_complete(bash_script, "fleet", "deliberate", "fib", "--wa") == [
        "--wait",
        "--wait-timeout",
    ]
    # Flags of another command are not offered.
    assert _bash_complete(bash_script, "fleet", "deliberate", "--agent-b") == []
    assert _bash_complete(bash_script, "fleet", "up", "--agent-b") == ["--agent-backend"]


def test_bash_completes_subcommands_and_choices(bash_script: Path) -> None:
    assert _bash_complete(bash_script, "fleet", "--debug", "councils", "") == [
        "list",
        "create",
        "delete",
    ]
    assert _bash_complete(bash_script, "fleet", "up", "--agent-backend", "") == ["ray", "nats"]
    assert _bash_complete(bash_script, "fleet", "deliberate", "--role", "D") == [
        "DEV",
        "DEVOPS",
        "DATA",
    ]
    assert _bash_complete(bash_script, "fleet", "projections", "rebuild", "") == [
        "graph",
        "cache",
        "outbox",
    ]
    # A flag's value is skipped on the way: "3" is the value of --agents, not the role.
    offered = _bash_complete(bash_script, "fleet", "councils", "create", "--agents", "3", "")
    assert offered == ["DEV", "QA", "ARCHITECT", "DEVOPS", "DATA"]


def test_zsh_script_parses_and_completes_in_zsh(tmp_path: Path) -> None:
    zsh = _zsh()
    path = tmp_path / "_fleet"
    path.write_text(script(build_parser(), "zsh"))
    parsed = subprocess.run([zsh, "-n", str(path)], capture_output=True, text=True, check=False)
    assert parsed.returncode == 0, parsed.stderr
    # Outside a completion widget: record what the completion system would be asked to show.
    driver = f"""
compdef() {{ :; }}
compadd() {{ print -r -- "values: ${{@[2,-1]}}"; }}
_describe() {{ print -rl -- "${{(@P)4}}"; }}
source {path}
words=(fleet deliberate --role ''); CURRENT=4; _fleet
words=(fleet del); CURRENT=2; _fleet
"""
    done = subprocess.run(
        [zsh, "-f", "-c", driver], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "values: DEV QA ARCHITECT DEVOPS DATA"
    assert "deliberate:submit a deliberation" in lines


def test_the_command_prints_the_script_of_its_own_parser() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fleet.cli", "completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == script(build_parser(), "bash")
