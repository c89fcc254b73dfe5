"""The ``fleet`` command: run the system and talk to it.

Each command group is a module in ``fleet.cli.commands`` with a ``register(subparsers)``
function; they are discovered, so adding a command touches no shared file but the table of
help groups (``fleet.cli._help``), which says where ``fleet --help`` lists it. Every command prints
for people by default and JSON with ``--json``. An error is one line on stderr and a non-zero exit
(2 for bad input, 1 for everything else), whatever failed: a port already taken, a server that
would not start, a lost connection. ``--debug`` (or ``FLEET_DEBUG=1``) adds the traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence

import grpc
from rich.text import Text

from fleet import __version__
from fleet.cli import _help, commands
from fleet.cli._common import CliError, err


def build_parser() -> argparse.ArgumentParser:
    p = _help.GroupedHelpParser(
        prog="fleet", description="Fleet: event-sourced multi-agent LLM deliberation."
    )
    p.add_argument("--version", action="version", version=f"fleet {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    p.add_argument(
        "--debug", action="store_true", help="print the traceback of an error (FLEET_DEBUG=1)"
    )
    sub = p.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser
    )
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    _help.apply(p)
    return p


def _error(message: str) -> None:
    err.print(Text.assemble(("error: ", "red"), " ".join(message.split())))


def _leaves(e: BaseException) -> list[BaseException]:
    """The errors inside a group (a TaskGroup's), flattened: those say what went wrong."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


def _describe(e: BaseException) -> str:
    """One line naming the problem. Errors of ours and the store's read as sentences already;
    anything else gets its type, which often is the clue (``ConnectionRefusedError: …``)."""
    from eventsourcing.persistence import PersistenceError

    from fleet.config import ConfigError
    from fleet.embedded._process import ServerProcessError
    from fleet.grpc.server import ListenError

    plain_types = (CliError, ConfigError, PersistenceError, ServerProcessError, ListenError)
    parts = []
    for leaf in _leaves(e):
        text = str(leaf).strip() or "(no message)"
        plain = isinstance(leaf, plain_types)
        parts.append(text if plain else f"{type(leaf).__name__}: {text}")
    return "; ".join(dict.fromkeys(parts))


def _unexpected(e: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exception(e, file=sys.stderr)
        _error(_describe(e))
    else:
        _error(f"{_describe(e)} (--debug or FLEET_DEBUG=1 shows the traceback)")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = bool(args.debug) or os.environ.get("FLEET_DEBUG", "").lower() in ("1", "true", "yes")
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
        return _unexpected(e, debug)
