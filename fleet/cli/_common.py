"""What every ``fleet`` command shares: consoles, errors, where Fleet runs, settings."""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from rich.console import Console

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from fleet.client import ClientSecurity, FleetClient
    from fleet.config import Settings

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What each command module's ``register(subparsers)`` adds its parser to."""

ROLES = ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA")
"""``aggregates.Role``'s values, spelled out: a command's parser is built on every run, and the
aggregates (with ``eventsourcing``) take a third of a second to import. A unit test keeps the two
equal."""
PHASES = ("DESIGN", "BUILD", "TEST", "DOCS")
"""``aggregates.story.Phase``'s values, likewise."""


def offer(action: argparse.Action, values: Sequence[str]) -> argparse.Action:
    """Have shell completion offer ``values`` for ``action``, without argparse enforcing them.

    Roles and phases are checked by the API, which answers a bad one in one line naming the
    field (INVALID_ARGUMENT, exit 2); ``choices`` would print a usage block instead.
    """
    action.completion_values = tuple(values)  # type: ignore[attr-defined]
    return action


console = Console()
err = Console(stderr=True, soft_wrap=True)  # an error stays one line, however long


class CliError(Exception):
    """A user-facing failure: printed as one line, exit code ``code`` (2: bad input)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def data_dir(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "data_dir", None) or os.environ.get("FLEET_DATA_DIR") or ".fleet")


def api_address(args: argparse.Namespace) -> str:
    """--address, FLEET_ADDRESS, a running `fleet up` (its run.json), then the default port."""
    if getattr(args, "address", None):
        return str(args.address)
    if os.environ.get("FLEET_ADDRESS"):
        return os.environ["FLEET_ADDRESS"]
    from fleet.bootstrap import read_run_file

    run = read_run_file(data_dir(args))
    if run and run.get("grpc"):
        return str(run["grpc"])
    return f"127.0.0.1:{settings(args).grpc_port}"


def event_store(args: argparse.Namespace) -> tuple[str, str]:
    """The NATS URL and stream: the environment first, then a running `fleet up`."""
    s = settings(args)
    if s.nats_url:
        return s.nats_url, s.stream
    from fleet.bootstrap import read_run_file

    run = read_run_file(data_dir(args))
    if run and run.get("nats_url"):
        return str(run["nats_url"]), str(run.get("stream") or s.stream)
    raise CliError(
        "no event store to read: set NATS_URL (and FLEET_STREAM) or start `fleet up` "
        f"with --data-dir {data_dir(args)}"
    )


def settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings from the environment, with the command's flags on top."""
    from fleet.config import ConfigError, Settings

    if getattr(args, "data_dir", None):
        overrides.setdefault("data_dir", Path(args.data_dir))
    for flag in ("grpc_port", "grpc_host"):
        if getattr(args, flag, None):
            overrides.setdefault(flag, getattr(args, flag))
    try:
        return Settings.from_env(**overrides)
    except ConfigError as e:
        raise CliError(str(e), code=2) from e


def add_client_options(parser: argparse.ArgumentParser) -> None:
    """Options of every command that talks to a running Fleet."""
    parser.add_argument(
        "--address", help="gRPC address (default: FLEET_ADDRESS, a running `fleet up`, :50055)"
    )
    parser.add_argument("--data-dir", help="where `fleet up` keeps its data (default .fleet)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sec = parser.add_argument_group("security (also FLEET_TLS, FLEET_TLS_CA, FLEET_API_TOKEN, …)")
    sec.add_argument("--tls", action="store_true", default=None, help="speak TLS to the API")
    sec.add_argument("--ca", help="CA bundle (PEM) for the server's certificate")
    sec.add_argument("--cert", help="client certificate (PEM) for mTLS")
    sec.add_argument("--key", help="client key (PEM) for mTLS")
    sec.add_argument("--token-file", help="file holding the bearer token (or set FLEET_API_TOKEN)")


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """The task text and the role whose council takes it: every command that submits one."""
    parser.add_argument("task", help="the task text")
    offer(
        parser.add_argument(
            "--role",
            default="DEV",
            metavar="ROLE",
            help="DEV (default), QA, ARCHITECT, DEVOPS or DATA",
        ),
        ROLES,
    )


CLIENT_ENV = (
    "FLEET_ADDRESS",
    "FLEET_TLS",
    "FLEET_TLS_CA",
    "FLEET_TLS_CLIENT_CERT",
    "FLEET_TLS_CLIENT_KEY",
    "FLEET_TLS_SERVER_NAME",
    "FLEET_API_TOKEN",
)
"""What the CLI reads from the environment to reach the API (besides Settings)."""


def client_security(args: argparse.Namespace) -> ClientSecurity:
    """TLS files and token: flags first, then the environment. The token is never a flag's
    value (it would show in ``ps``): use ``--token-file`` or ``FLEET_API_TOKEN``."""
    from fleet.client import ClientSecurity

    env = os.environ

    def pick(flag: str, name: str) -> Path | None:
        raw = getattr(args, flag, None) or env.get(name)
        if not raw:
            return None
        path = Path(raw)
        if not path.is_file():
            raise CliError(
                f"{name if not getattr(args, flag, None) else '--' + flag}: {raw} is not a file",
                code=2,
            )
        return path

    token = env.get("FLEET_API_TOKEN", "")
    if getattr(args, "token_file", None):
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as e:
            raise CliError(f"--token-file: {e}", code=2) from e
    tls = bool(getattr(args, "tls", None)) or env.get("FLEET_TLS", "").lower() in ("1", "true")
    return ClientSecurity(
        tls=tls,
        ca_file=pick("ca", "FLEET_TLS_CA"),
        cert_file=pick("cert", "FLEET_TLS_CLIENT_CERT"),
        key_file=pick("key", "FLEET_TLS_CLIENT_KEY"),
        token=token,
        server_name=env.get("FLEET_TLS_SERVER_NAME", ""),
    )


def client(args: argparse.Namespace, *, timeout: float = 30.0) -> FleetClient:
    """A FleetClient for the command's address and security options (use ``async with``)."""
    from fleet.client import FleetClient

    return FleetClient(api_address(args), timeout=timeout, security=client_security(args))


CONNECT_TIMEOUT_S = 3.0
"""How long a command that reads the event store waits for NATS before saying it cannot."""


async def reachable_event_store(args: argparse.Namespace) -> tuple[str, str]:
    """``event_store``, checked: a server that does not answer is one line in seconds, not a
    minute of the store's reconnect attempts (which suit a running node, not a command)."""
    url, stream = event_store(args)
    await check_reachable(url)
    return url, stream


class Unreachable(Exception):
    """A NATS server did not answer ``connect_once``; ``cause`` is the last error seen."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


async def connect_once(url: str, timeout_s: float, *, name: str) -> NatsClient:
    """A connection to ``url`` after one quick attempt and one retry, without nats-py's
    reconnect loop or its traceback per attempt (a command, not a running node).

    Raises:
        Unreachable: refused, unknown host, or no greeting within ``timeout_s``.
    """
    # Here, not at the top: nats-py imports aiohttp (its websocket transport), and most
    # commands talk gRPC only.
    import nats
    from nats.errors import Error as NatsError

    from natsio import servers

    seen: list[Exception] = []

    async def remember(e: Exception) -> None:  # instead of nats-py's traceback per attempt
        seen.append(e)

    try:
        return await asyncio.wait_for(
            nats.connect(
                servers(url),
                name=name,
                connect_timeout=timeout_s,
                allow_reconnect=False,
                max_reconnect_attempts=1,  # nats-py: 0 and -1 both mean "for ever"
                reconnect_time_wait=0.1,
                error_cb=remember,
            ),
            timeout_s * 2,
        )
    except (OSError, NatsError, TimeoutError) as e:
        raise Unreachable(seen[-1] if seen else e) from None


async def check_reachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Connect once (two quick attempts), then close: the server at ``url`` answers.

    Raises:
        CliError: it does not (refused, unknown host, no greeting within ``timeout_s``).
    """
    try:
        nc = await connect_once(url, timeout_s, name="fleet-cli")
    except Unreachable as e:
        why = str(e.cause).strip() or f"no answer within {timeout_s:g} s"
        msg = f"cannot reach NATS at {masked(url)} ({type(e.cause).__name__}: {why})"
        raise CliError(msg) from None
    await nc.close()


def masked(url: str) -> str:
    """``url`` with any password replaced by ``***`` (it goes to a terminal or a log)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
