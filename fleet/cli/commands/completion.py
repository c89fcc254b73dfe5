"""``fleet completion bash|zsh``: print the shell's completion script (``fleet.cli.completion``)."""

from __future__ import annotations

import argparse
import sys

from fleet.cli._common import Subparsers
from fleet.cli.completion import SHELLS


def register(sub: Subparsers) -> None:
    c = sub.add_parser("completion", help="print the bash or zsh completion script")
    c.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")
    c.set_defaults(fn=cmd_completion)


async def cmd_completion(args: argparse.Namespace) -> None:
    from fleet.cli._main import build_parser  # the whole parser, as `fleet` builds it
    from fleet.cli.completion import script

    sys.stdout.write(script(build_parser(), args.shell))
