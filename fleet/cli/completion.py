"""Shell completion scripts for bash and zsh, generated from the ``fleet`` parser itself.

The parser is the one description of the command line, so the scripts are derived from it each
time (``fleet completion bash|zsh``) and cannot drift from it: a new command, flag or choice is
completed as soon as it is registered. The scripts are static (no Python runs on each TAB), which
keeps completion instant on a machine where importing Fleet takes a second.

What is completed: commands and subcommands, the flags of the command typed so far, the values
of a flag or positional with ``choices`` (or values ``fleet.cli._common.offer`` names), and file
names for any other flag that takes a value.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SHELLS = ("bash", "zsh")


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    takes_value: bool
    values: tuple[str, ...]
    """What to offer as its value; empty with ``takes_value``: file names."""


@dataclass(frozen=True)
class Command:
    path: str
    """The words after ``fleet`` that name it, space-separated ("" for ``fleet`` itself)."""
    subcommands: tuple[tuple[str, str], ...]
    """(name, one-line help) of each subcommand, in help order."""
    options: tuple[Option, ...]
    positional_values: tuple[str, ...]


def _values(action: argparse.Action) -> tuple[str, ...]:
    offered = getattr(action, "completion_values", None)
    if offered:
        return tuple(offered)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return tuple(str(c) for c in action.choices)
    return ()


def commands(parser: argparse.ArgumentParser, path: str = "") -> Iterator[Command]:
    """Every command of ``parser``, depth first, starting with ``parser`` itself."""
    subs: list[tuple[str, str]] = []
    children: list[tuple[str, argparse.ArgumentParser]] = []
    options: list[Option] = []
    positional: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._get_subactions()}
            for name, child in action.choices.items():
                subs.append((name, helps.get(name, "")))
                children.append((name, child))
        elif action.option_strings:
            options.append(
                Option(
                    flags=tuple(action.option_strings),
                    help=action.help or "",
                    takes_value=action.nargs != 0,
                    values=_values(action),
                )
            )
        else:
            positional += _values(action)
    yield Command(path, tuple(subs), tuple(options), tuple(positional))
    for name, child in children:
        yield from commands(child, f"{path} {name}".strip())


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``)."""
    if shell not in SHELLS:
        raise ValueError(f"no completion for {shell!r}: one of {', '.join(SHELLS)}")
    tree = list(commands(parser))
    return _bash(tree) if shell == "bash" else _zsh(tree)


def _q(text: str) -> str:
    """``text`` as one single-quoted shell word (bash and zsh read it the same)."""
    return "'" + text.replace("'", "'\\''") + "'"


def _case(name: str, doc: str, arms: Sequence[tuple[str, str]], default: str = "") -> str:
    """A shell function that prints a fixed answer per key (``case "$1|$2"``)."""
    lines = [f"{name}() {{  # {doc}", '    case "$1|$2" in']
    lines += [f"        {_q(key)}) {body} ;;" for key, body in arms]
    if default:
        lines.append(f"        *) {default} ;;")
    lines += ["    esac", "}"]
    return "\n".join(lines)


def _value_arms(tree: Sequence[Command]) -> list[tuple[str, str]]:
    return [
        (f"{c.path}|{flag}", f"echo {_q(' '.join(o.values))}")
        for c in tree
        for o in c.options
        if o.takes_value
        for flag in o.flags
    ]


def _bash(tree: Sequence[Command]) -> str:
    subcommands = _case(
        "_fleet_subcommands",
        "$1: a command path; its subcommands",
        [(f"{c.path}|", f"echo {_q(' '.join(n for n, _ in c.subcommands))}") for c in tree
         if c.subcommands],
    )  # fmt: skip
    positionals = _case(
        "_fleet_positionals",
        "$1: a command path; the values its positionals take",
        [(f"{c.path}|", f"echo {_q(' '.join(c.positional_values))}") for c in tree
         if c.positional_values],
    )  # fmt: skip
    flags = _case(
        "_fleet_flags",
        "$1: a command path; its flags",
        [(f"{c.path}|", f"echo {_q(' '.join(f for o in c.options for f in o.flags))}")
         for c in tree],
    )  # fmt: skip
    values = _case(
        "_fleet_values",
        "$1: a command path, $2: a flag; its values (status 1: it takes none)",
        _value_arms(tree),
        default="return 1",
    )
    return f"""# bash completion for fleet; generated by `fleet completion bash` from its parser.
# Load it with: eval "$(fleet completion bash)"   (e.g. in ~/.bashrc)

{subcommands}

{positionals}

{flags}

{values}

_fleet() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local cmd="" word values i=1
    # Walk the words before the cursor: subcommands extend the command path; a flag that
    # takes a value skips that value.
    while (( i < COMP_CWORD )); do
        word=${{COMP_WORDS[i]}}
        if [[ $word == -* ]]; then
            if [[ $word != *=* ]] && _fleet_values "$cmd" "$word" >/dev/null; then
                (( i++ ))
            fi
        elif [[ " $(_fleet_subcommands "$cmd") " == *" $word "* ]]; then
            cmd="${{cmd:+$cmd }}$word"
        fi
        (( i++ ))
    done
    COMPREPLY=()
    if (( COMP_CWORD > 1 )) && [[ $prev == -* ]] && values=$(_fleet_values "$cmd" "$prev"); then
        # The value of a flag: its choices, else (nothing here) file names by -o default.
        [[ -n $values ]] && COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_fleet_flags "$cmd")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_fleet_subcommands "$cmd") $(_fleet_positionals "$cmd")" \\
            -- "$cur"))
    fi
    return 0
}}

complete -o default -F _fleet fleet
"""


def _zsh(tree: Sequence[Command]) -> str:
    def described(entries: Sequence[tuple[str, str]]) -> str:
        # _describe reads "name:description"; a colon in a name would need escaping (none has).
        return "print -rl -- " + " ".join(
            _q(f"{name}:{' '.join(text.split())}") for name, text in entries
        )

    subcommands = _case(
        "_fleet_subcommands",
        "$1: a command path; name:description of each subcommand",
        [(f"{c.path}|", described(c.subcommands)) for c in tree if c.subcommands],
    )
    positionals = _case(
        "_fleet_positionals",
        "$1: a command path; the values its positionals take",
        [(f"{c.path}|", f"echo {_q(' '.join(c.positional_values))}") for c in tree
         if c.positional_values],
    )  # fmt: skip
    flags = _case(
        "_fleet_flags",
        "$1: a command path; flag:description of each flag",
        [(f"{c.path}|", described([(f, o.help) for o in c.options for f in o.flags]))
         for c in tree],
    )  # fmt: skip
    values = _case(
        "_fleet_values",
        "$1: a command path, $2: a flag; its values (status 1: it takes none)",
        _value_arms(tree),
        default="return 1",
    )
    return f"""#compdef fleet
# zsh completion for fleet; generated by `fleet completion zsh` from its parser.
# Install: fleet completion zsh > "${{fpath[1]}}/_fleet"  (then start a new shell), or
# after compinit in ~/.zshrc: source <(fleet completion zsh)

{subcommands}

{positionals}

{flags}

{values}

_fleet() {{
    local cmd="" word values i=2
    local -a entries names
    # ("path" is zsh's own array of $PATH: the command path is "cmd" here.)
    while (( i < CURRENT )); do
        word=${{words[i]}}
        if [[ $word == -* ]]; then
            if [[ $word != *=* ]] && _fleet_values "$cmd" "$word" >/dev/null; then
                (( i++ ))
            fi
        else
            names=(${{${{(f)"$(_fleet_subcommands "$cmd")"}}%%:*}})
            if (( ${{names[(Ie)$word]}} )); then
                cmd="${{cmd:+$cmd }}$word"
            fi
        fi
        (( i++ ))
    done
    if (( CURRENT > 2 )) && [[ ${{words[CURRENT-1]}} == -* ]] \\
        && values=$(_fleet_values "$cmd" "${{words[CURRENT-1]}}"); then
        if [[ -n $values ]]; then compadd -- ${{=values}}; else _files; fi
        return
    fi
    if [[ ${{words[CURRENT]}} == -* ]]; then
        entries=(${{(f)"$(_fleet_flags "$cmd")"}})
        _describe -t options option entries
        return
    fi
    entries=(${{(f)"$(_fleet_subcommands "$cmd")"}})
    (( ${{#entries}} )) && _describe -t commands command entries
    values=$(_fleet_positionals "$cmd")
    [[ -n $values ]] && compadd -- ${{=values}}
    return 0
}}

if [[ ${{funcstack[1]}} == _fleet ]]; then
    _fleet "$@"
else
    compdef _fleet fleet
fi
"""
