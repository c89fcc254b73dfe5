"""How ``fleet --help`` reads: commands in groups, the ones to start with first, with examples.

Command modules are discovered (``fleet.cli.commands``) and register in module order, which
says nothing to a reader. The order a person needs is a decision of its own, so it is written
down here, once: ``COMMAND_GROUPS`` lists every command under a heading, and ``EXAMPLES`` the
lines worth copying, for the top-level help and for each command's own. A command no group
names is listed under "Other commands" (a test fails until it has a home).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandGroup:
    title: str
    commands: tuple[str, ...]
    """In the order they are listed."""


COMMAND_GROUPS: tuple[CommandGroup, ...] = (
    CommandGroup("Start here", ("up", "demo", "deliberate", "watch")),
    CommandGroup(
        "Results and history",
        ("result", "list", "cancel", "replay", "query", "events", "metrics"),
    ),
    CommandGroup(
        "Plans and councils", ("approve-plan", "orchestrate", "context", "councils", "agents")
    ),
    CommandGroup("Operations", ("doctor", "projections", "verify", "worker", "completion")),
)
OTHER = "Other commands"

EXAMPLES: tuple[tuple[str, str], ...] = (
    ("fleet up", "run everything on this machine (embedded NATS, graph, cache, model)"),
    ("fleet deliberate 'write fib(n)' --wait", "ask three DEV agents and wait for the winner"),
    ("fleet list --status FAILED --since 2h", "what failed lately"),
    ("fleet doctor", "what is wrong with this setup, and how to fix it"),
    ('eval "$(fleet completion bash)"', "tab completion in this shell"),
)
"""Shown under the top-level help: (command line, what it does)."""

COMMAND_EXAMPLES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "up": (
        ("fleet up", "everything embedded, data under .fleet"),
        ("NATS_URL=nats://nats:4222 VLLM_URL=http://vllm:8000 fleet up", "on existing servers"),
        ("fleet up --components api", "an API replica beside a node that projects"),
    ),
    "demo": (("fleet demo", "start the embedded system and run one deliberation end to end"),),
    "deliberate": (
        ("fleet deliberate 'write fib(n)' --wait", "submit and follow it live"),
        (
            "fleet deliberate 'review the schema' --role DATA --agents 5 --rounds 2",
            "five DATA agents, two rounds",
        ),
        (
            "fleet deliberate 'parse dates' --tests test_dates.py --wait",
            "each DEV candidate runs the tests in the sandbox",
        ),
    ),
    "watch": (("fleet watch T-42", "follow a deliberation until it ends"),),
    "result": (("fleet result T-42 --json", "status, proposals, scores and the winner"),),
    "list": (
        ("fleet list --status FAILED --since 2h", "what failed in the last two hours"),
        ("fleet list --role DEV --all --json", "every DEV deliberation, as JSON"),
    ),
    "replay": (
        ("fleet replay T-42", "its events, read back from the stream and folded"),
        ("fleet replay T-42 --to-version 3", "the state as of its third event"),
    ),
    "query": (
        ("fleet query 'MATCH (d:Deliberation) RETURN d.task_id, d.status LIMIT 5'", ""),
        ("fleet query 'MATCH (d:Deliberation {role: $r}) RETURN count(d)' --param r=DEV", ""),
    ),
    "events": (("fleet events tail --from-seq 1 --count 20", "the first twenty events"),),
    "doctor": (
        ("fleet doctor", "check every part the settings name"),
        ("fleet doctor --json | jq '.checks[] | select(.status != \"ok\")'", "what is not ok"),
    ),
    "completion": (
        ('eval "$(fleet completion bash)"', "bash, this shell (add it to ~/.bashrc)"),
        ('fleet completion zsh > "${fpath[1]}/_fleet"', "zsh, every new shell"),
    ),
    "worker": (("fleet worker --role DEV --concurrency 16", "serve DEV calls from the queue"),),
    "projections": (("fleet projections rebuild graph", "rebuild the graph from sequence 1"),),
}
"""Shown under each command's own help."""

FOOTER = "`fleet COMMAND --help` shows a command's flags and examples."


def examples_text(examples: tuple[tuple[str, str], ...]) -> str:
    lines = ["examples:"]
    for command, what in examples:
        lines.append(f"  {command}")
        if what:
            lines.append(f"      {what}")
    return "\n".join(lines)


class GroupedHelpParser(argparse.ArgumentParser):
    """The top-level parser: its help lists commands by ``COMMAND_GROUPS``, not by module."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        for title, entries in self._grouped_commands():
            formatter.start_section(title)
            formatter.add_arguments(entries)
            formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()

    def _grouped_commands(self) -> list[tuple[str, list[argparse.Action]]]:
        entries = {a.dest: a for a in _subparsers(self)._get_subactions()}
        groups = [(g.title, [entries.pop(c) for c in g.commands if c in entries]) for g in
                  COMMAND_GROUPS]  # fmt: skip
        groups.append((OTHER, list(entries.values())))
        return [(title, found) for title, found in groups if found]


def _subparsers(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise LookupError(f"{parser.prog} has no subcommands")


def apply(parser: GroupedHelpParser) -> None:
    """Give the top-level help its examples and each command's help its own (after every
    command has registered)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = f"{examples_text(EXAMPLES)}\n\n{FOOTER}"
    for name, command in _subparsers(parser).choices.items():
        if name in COMMAND_EXAMPLES:
            command.formatter_class = argparse.RawDescriptionHelpFormatter
            command.epilog = examples_text(COMMAND_EXAMPLES[name])
