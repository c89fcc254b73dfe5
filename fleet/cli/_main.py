"""The ``fleet`` command: run the system and talk to it.

Each command group is a module in ``fleet.cli.commands`` with a ``register(subparsers)``
function; they are discovered, so adding a command touches no shared file. Every command prints
for people by default and JSON with ``--json``. An error is one line on stderr and a non-zero exit
(2 for bad input, 1 for everything else).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

import grpc
from rich.text import Text

from fleet import __version__
from fleet.cli import commands
from fleet.cli._common import CliError, err
from fleet.config import ConfigError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fleet", description="Fleet: event-sourced multi-agent LLM deliberation."
    )
    p.add_argument("--version", action="version", version=f"fleet {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return p


def _error(message: str) -> None:
    err.print(Text.assemble(("error: ", "red"), " ".join(message.split())))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        asyncio.run(args.fn(args))
        return 0
    except CliError as e:
        _error(str(e))
        return e.code
    except grpc.aio.AioRpcError as e:
        code = e.code()
        _error(f"{code.name}: {e.details()}")
        return 2 if code == grpc.StatusCode.INVALID_ARGUMENT else 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        from eventsourcing.persistence import PersistenceError

        if isinstance(e, PersistenceError | ConfigError | LookupError):
            _error(str(e))
            return 1
        raise
