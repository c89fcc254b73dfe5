"""A private Valkey (or Redis) server for the cache projection, on a free loopback port.

``fleet up`` and the tests never share a cache server with anything else on the machine: they
start their own ``valkey-server`` when one is on ``$PATH``, else ``redis-server`` (the protocol and
the commands the cache uses are the same), with persistence off. The cache is a projection: losing
it loses nothing, so there is no RDB or AOF to recover, and a restart comes back empty on purpose.

Example::

    with ValkeyServer(Path("/tmp/fleet-valkey")) as server:
        print(server.url)          # redis://127.0.0.1:<free port>/0
        server.kill()              # SIGKILL, as a crash would
        server.start()             # same port, empty cache
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from fleet.embedded._process import LOOPBACK, ServerProcess, ServerProcessError, free_port

__all__ = ["ValkeyServer", "valkey_server_binary"]

_CANDIDATES = ("valkey-server", "redis-server")


def valkey_server_binary() -> Path:
    """Return ``valkey-server`` from ``$PATH``, else ``redis-server``.

    Raises:
        ServerProcessError: neither is installed.
    """
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return Path(found)
    msg = f"neither of {list(_CANDIDATES)} is on PATH; install valkey-server or redis-server"
    raise ServerProcessError(msg)


def ping(host: str, port: int, *, timeout: float = 0.5) -> bool:
    """True when the server answers ``PING`` with ``+PONG``.

    An open port is not enough: the server accepts connections while it is still loading, and
    answers ``-LOADING`` until then. Raw RESP keeps this module free of a client library.
    """
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(b"PING\r\n")
        return s.recv(64).startswith(b"+PONG")


class ValkeyServer(ServerProcess):
    """A private, non-persistent Valkey/Redis server on a loopback port.

    The port is chosen once (a free one unless given) and kept, so ``kill()`` then ``start()``
    brings the server back on the same URL, empty, the way a cache pod without a volume comes back.

    Args:
        data_dir: working directory (``--dir``) and home of the log file; created if missing.
        port: the port; a free loopback port when None.
        host: interface to listen on; loopback by default.
        binary: the server executable; ``valkey-server`` or ``redis-server`` from $PATH when None.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        binary: Path | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        exe = binary or valkey_server_binary()
        chosen = port if port is not None else free_port(host)
        argv = [
            str(exe),
            "--port", str(chosen),
            "--bind", host,
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.data_dir),
        ]  # fmt: skip
        super().__init__(
            exe.name,
            argv,
            port=chosen,
            log_path=self.data_dir / f"{exe.name}.log",
            ready=lambda: ping(host, chosen),
            host=host,
        )

    @property
    def url(self) -> str:
        """The client URL, e.g. ``redis://127.0.0.1:40123/0`` (valkey-py accepts ``redis://``)."""
        return f"redis://{self.host}:{self.port}/0"

    def __enter__(self) -> ValkeyServer:
        self.start()
        return self
