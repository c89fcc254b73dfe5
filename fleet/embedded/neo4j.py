"""A private Neo4j (Community Edition 5) over Bolt, for ``FLEET_GRAPH=neo4j`` and the graph tests.

Neo4j ships no Python package: the server is Java. ``scripts/neo4j-jars.sh`` (``make neo4j``, also
run by ``make setup-dev``) asks Maven for Neo4j's jars and compiles a small launcher
(``neo4j_launcher/FleetNeo4j.java``, next to this module) into a cache folder outside the
checkout; this module only starts that launcher, so nothing is fetched when Fleet starts. The
launcher runs Neo4j embedded with the Bolt connector on a loopback port (no HTTP), its databases
and logs in a data directory, the user and password from the environment (never on the command
line, where ``ps`` shows them, and never in a log), and prints a ready line once a client can log
in. SIGTERM stops it cleanly (a checkpoint, then the store files close); after a SIGKILL it
recovers from its transaction log on the next start.

Example::

    server = Neo4jServer(Path("/tmp/fleet-neo4j"), password=generate_password())
    with server:
        print(server.uri)          # bolt://127.0.0.1:<free port>
        server.kill()              # SIGKILL, as a crash would
        server.start()             # same port, same data: the graph comes back

Sizes: a 512 MiB heap and a 256 MiB page cache suit a small machine (2 cores, a few GiB spare);
both are arguments.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fleet.embedded._process import LOOPBACK, ServerProcess, ServerProcessError, free_port

__all__ = [
    "DISTRIBUTION_JVM",
    "LAUNCHER_CLASS",
    "NEO4J_VERSION",
    "QUICK_START_JVM",
    "SETUP_COMMAND",
    "Neo4jJars",
    "Neo4jServer",
    "Neo4jSetupError",
    "default_neo4j_home",
    "fleet_cache_dir",
    "generate_password",
    "java_binary",
    "neo4j_jars",
    "stored_password",
]

NEO4J_VERSION = "5.26.0"
"""The Neo4j release the launcher is built against (``neo4j_launcher/pom.xml`` says the same)."""

SETUP_COMMAND = "make neo4j"
"""What resolves the jars and compiles the launcher (``bash scripts/neo4j-jars.sh``)."""

READY_LINE = b"FLEET-NEO4J READY"
"""What the launcher prints once the password is set and Bolt accepts logins."""

DISTRIBUTION_JVM = (
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
)
"""The JVM options Neo4j's own server distribution starts with (its ``neo4j.conf``,
``server.jvm.additional``), so that the private server runs the engine as a deployed one does.
Without the module openings the page cache falls back to a slower path for its buffers (its log
says so: "Reflection access to java.nio.DirectByteBuffer is not available, using fallback
mode") and the transaction logs cannot be advised to the kernel ("Unable to advise sequential
access ... Incorrect file descriptor"). Left out: the TLS options (the private server speaks
plain Bolt on loopback) and ``-XX:+AlwaysPreTouch`` (its heap starts small and grows). G1, the
distribution's collector, is chosen unless ``jvm_options`` names another."""

QUICK_START_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""JVM options for a server that lives minutes (a test session): compile with the quick
compiler only, collect with one thread. Measured on a 2-core machine that other work loaded:
ready in 10 s instead of 24 s (load average 9), 50 s instead of 74 s (load average 18). A
long-lived server keeps the JVM's defaults, whose optimising compiler pays for itself over
hours."""

LAUNCHER_CLASS = "FleetNeo4j"
_SOURCES = Path(__file__).with_name("neo4j_launcher")
MIN_PASSWORD_LENGTH = 8
"""Neo4j refuses shorter passwords (``dbms.security.auth_minimum_password_length``)."""


class Neo4jSetupError(ServerProcessError):
    """What the private Neo4j needs is not installed; the message names the command to run."""


def fleet_cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/fleet``: what set-up builds once per machine and every
    checkout shares (the Neo4j jars; the tests' mypy cache)."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "fleet"


def default_neo4j_home() -> Path:
    """Where ``scripts/neo4j-jars.sh`` puts the jars: ``$FLEET_NEO4J_HOME``, else
    ``fleet_cache_dir() / neo4j-<version>`` (the script reads the same names)."""
    explicit = os.environ.get("FLEET_NEO4J_HOME", "").strip()
    if explicit:
        return Path(explicit)
    return fleet_cache_dir() / f"neo4j-{NEO4J_VERSION}"


@dataclass(frozen=True)
class Neo4jJars:
    """A resolved installation: Neo4j's jars, the compiled launcher, and (once
    ``build_class_archive`` made it) the class archive a start maps instead of loading classes."""

    lib: Path
    classes: Path

    @property
    def launcher(self) -> Path:
        """The launcher, packed in a jar: a class archive refuses a folder on the class path."""
        return self.classes / f"{LAUNCHER_CLASS}.jar"

    @property
    def classpath(self) -> str:
        return f"{self.lib}/*{os.pathsep}{self.launcher}"

    @property
    def class_archive(self) -> Path:
        """The JVM's class-data-sharing archive of the classes a start loads (``-XX:
        SharedArchiveFile``); beside the launcher, so a new launcher or new jars drop it."""
        return self.classes / "neo4j.jsa"


LAYOUT = "launcher: jar; class archive\n"
"""The cache's layout, part of the launcher's stamp, so that a cache laid out by an older
script is built again (``scripts/neo4j-jars.sh`` appends the same line)."""


def _source_stamp() -> str:
    """The hash the script records for the launcher it compiled (pom, source, layout)."""
    digest = hashlib.sha256()
    for name in ("pom.xml", f"{LAUNCHER_CLASS}.java"):
        digest.update((_SOURCES / name).read_bytes())
    digest.update(LAYOUT.encode())
    return digest.hexdigest()


def neo4j_jars(home: Path | None = None) -> Neo4jJars:
    """The jars and launcher under ``home`` (``default_neo4j_home()`` when None).

    Raises:
        Neo4jSetupError: they are missing, or were built from another launcher or pom than
            this checkout's (the message says to run ``SETUP_COMMAND``).
    """
    root = home or default_neo4j_home()
    jars = Neo4jJars(root / "lib", root / "classes")
    if not jars.launcher.is_file() or not any(jars.lib.glob("neo4j-kernel-*.jar")):
        msg = (
            f"Neo4j {NEO4J_VERSION} is not set up in {root}: run `{SETUP_COMMAND}` "
            "(Maven resolves the jars once; needs a JDK 17+ and mvn)"
        )
        raise Neo4jSetupError(msg)
    stamp = jars.classes / ".stamp"
    if stamp.is_file() and stamp.read_text().strip() != _source_stamp():
        msg = f"the Neo4j launcher in {root} is out of date: run `{SETUP_COMMAND}`"
        raise Neo4jSetupError(msg)
    return jars


def java_binary() -> Path:
    """``$JAVA_HOME/bin/java``, else ``java`` from ``$PATH``.

    Raises:
        Neo4jSetupError: neither exists.
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return Path(java_home) / "bin" / "java"
    found = shutil.which("java")
    if found:
        return Path(found)
    msg = (
        "no `java` on PATH (nor in $JAVA_HOME) for the private Neo4j: install a JDK 17+ "
        f"(Debian: apt-get install openjdk-17-jdk-headless), then run `{SETUP_COMMAND}`"
    )
    raise Neo4jSetupError(msg)


def generate_password() -> str:
    """A random password for a private server (URL-safe, well past Neo4j's minimum length)."""
    return secrets.token_urlsafe(24)


def stored_password(path: Path) -> str:
    """The password kept in ``path`` (mode 0600), made and written there on first use.

    A private Neo4j keeps its users in its own data, so a restart must log in with the password
    it was given before; keeping it beside the data (readable by its owner alone) lets the next
    ``fleet up`` reuse it without anyone choosing one.
    """
    try:
        kept = path.read_text().strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    path.parent.mkdir(parents=True, exist_ok=True)
    password = generate_password()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password + "\n")
    return password


def _class_archive(jars: Neo4jJars, jvm_options: Sequence[str]) -> tuple[str, ...]:
    """Map the class archive set-up recorded (``fleet.embedded.neo4j_archive``), unless there is
    none or the options name one. A JVM that finds it stale (another JDK, other jars) starts
    without it, silently, as it would with none."""
    if not jars.class_archive.is_file() or any(
        "SharedArchiveFile" in o or "ArchiveClassesAtExit" in o for o in jvm_options
    ):
        return ()
    return (f"-XX:SharedArchiveFile={jars.class_archive}",)


def _names_collector(option: str) -> bool:
    """``-XX:+UseSerialGC`` and the like: the JVM refuses two collectors."""
    return option.startswith("-XX:+Use") and option.endswith("GC")


class Neo4jServer(ServerProcess):
    """A private Neo4j Community server, Bolt on a loopback port, data in ``data_dir``.

    The port is chosen once (a free one unless given) and kept, so ``kill()`` then ``start()``
    (or ``restart()``) brings the same server back on the same URI and data, the way a crashed
    pod comes back. Start-up takes 10-20 s (a JVM, then two databases; a third less with the
    class archive set-up records, ``fleet.embedded.neo4j_archive``); ``start`` waits up to
    ``START_TIMEOUT_S``.

    Args:
        data_dir: the server's home: ``data/`` (databases, transaction logs), ``logs/``
            (Neo4j's own logs) and ``neo4j.log`` (the launcher's output); created if missing.
        password: the password to log in with (at least 8 characters). Given to the server
            through its environment; the server sets it on every start.
        user: the user to log in as (``neo4j``; another name is created).
        port: the Bolt port; a free loopback port when None.
        home: where the jars are (``default_neo4j_home()`` when None).
        heap_mb: the JVM's maximum heap.
        pagecache_mb: Neo4j's page cache (store files cached off the heap).
        java: the ``java`` executable; ``java_binary()`` when None.
        jvm_options: more JVM options (``QUICK_START_JVM`` for a short-lived server).

    Raises:
        Neo4jSetupError: the jars or ``java`` are missing (the message names the fix).
        ValueError: the password is too short for Neo4j.
    """

    START_TIMEOUT_S = 120.0
    STOP_TIMEOUT_S = 30.0

    def __init__(
        self,
        data_dir: Path,
        *,
        password: str,
        user: str = "neo4j",
        port: int | None = None,
        host: str = LOOPBACK,
        home: Path | None = None,
        heap_mb: int = 512,
        pagecache_mb: int = 256,
        java: Path | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        if len(password) < MIN_PASSWORD_LENGTH:
            msg = f"the Neo4j password must have at least {MIN_PASSWORD_LENGTH} characters"
            raise ValueError(msg)
        if host != LOOPBACK:
            raise ValueError(f"the private Neo4j listens on {LOOPBACK} only, not {host}")
        jars = neo4j_jars(home)
        exe = java or java_binary()
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.user = user
        self._password = password
        chosen = port if port is not None else free_port(host)
        argv = [
            str(exe),
            f"-Xmx{heap_mb}m",
            f"-Xms{min(heap_mb, 128)}m",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            *DISTRIBUTION_JVM,
            *(() if any(_names_collector(o) for o in jvm_options) else ("-XX:+UseG1GC",)),
            *jvm_options,
            *_class_archive(jars, jvm_options),
            "-cp", jars.classpath,
            LAUNCHER_CLASS,
            str(self.data_dir),
            str(chosen),
            str(pagecache_mb),
        ]  # fmt: skip
        super().__init__(
            "neo4j",
            argv,
            port=chosen,
            log_path=self.data_dir / "neo4j.log",
            ready=self._logged_in,
            env={"FLEET_NEO4J_USER": user, "FLEET_NEO4J_PASSWORD": password},
            host=host,
        )
        self._log_offset = 0

    @property
    def uri(self) -> str:
        """The Bolt URI, e.g. ``bolt://127.0.0.1:40123``."""
        return f"bolt://{self.host}:{self.port}"

    @property
    def auth(self) -> tuple[str, str]:
        """(user, password) for ``GraphDatabase.driver(uri, auth=...)``."""
        return (self.user, self._password)

    def __repr__(self) -> str:  # the password stays out of reprs and logs
        return f"Neo4jServer(uri={self.uri!r}, data_dir={str(self.data_dir)!r})"

    def spawn(self) -> None:
        """Start the JVM; readiness counts only what this run writes to the log."""
        if self.running():
            return
        try:
            self._log_offset = self.log_path.stat().st_size
        except FileNotFoundError:
            self._log_offset = 0
        super().spawn()

    def _logged_in(self) -> bool:
        """True once this run printed its ready line (an open Bolt port comes seconds earlier,
        before the databases answer and before another user than ``neo4j`` exists)."""
        with self.log_path.open("rb") as f:
            f.seek(self._log_offset)
            return READY_LINE in f.read()

    def start(self, *, timeout: float = START_TIMEOUT_S) -> None:
        super().start(timeout=timeout)

    def wait_ready(self, *, timeout: float = START_TIMEOUT_S) -> None:
        super().wait_ready(timeout=timeout)

    def restart(self, *, timeout: float = START_TIMEOUT_S) -> None:
        super().restart(timeout=timeout)

    def stop(self, *, timeout: float = STOP_TIMEOUT_S) -> None:
        super().stop(timeout=timeout)

    def __enter__(self) -> Neo4jServer:
        self.start()
        return self
