"""``fleet --help`` lists commands by group, the ones to start with first, and every flag of
every command says what it is for."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from fleet.cli import build_parser
from fleet.cli._help import COMMAND_EXAMPLES, COMMAND_GROUPS, OTHER


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("fleet",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _top_level_names(parser: argparse.ArgumentParser) -> list[str]:
    return [
        name
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for name in a.choices
    ]


def test_every_option_positional_and_subcommand_has_help() -> None:
    missing = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            name = "/".join(action.option_strings) or action.dest
            if isinstance(action, argparse._SubParsersAction):
                missing += [
                    f"{' '.join(path)} {a.dest} (subcommand)"
                    for a in action._get_subactions()
                    if not (a.help or "").strip()
                ]
            elif not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path)} {name}")
    assert not missing, "no help= on:\n" + "\n".join(missing)


def test_every_command_has_a_group_and_every_grouped_name_is_a_command() -> None:
    names = _top_level_names(build_parser())
    grouped = [c for g in COMMAND_GROUPS for c in g.commands]
    assert sorted(names) == sorted(grouped), "a command is in no group, or a group names none"
    assert len(grouped) == len(set(grouped)), "a command is in two groups"
    assert set(COMMAND_EXAMPLES) <= set(names)


def test_help_starts_with_the_commands_to_start_with_and_ends_with_examples() -> None:
    text = build_parser().format_help()
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and line[0] != " "]
    assert headings == [
        "Start here",
        "Results and history",
        "Plans and councils",
        "Operations",
        "options",
        "examples",
    ]
    assert OTHER not in text
    start = text.split("Start here:\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0] for line in start.splitlines() if line.startswith("  ")] == [
        "up",
        "demo",
        "deliberate",
        "watch",
    ]
    assert "fleet deliberate 'write fib(n)' --wait" in text.split("examples:", 1)[1]


@pytest.mark.parametrize("command", ["deliberate", "doctor", "completion"])
def test_a_command_help_shows_its_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert COMMAND_EXAMPLES[command][0][0] in out
