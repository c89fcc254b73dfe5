"""The private Neo4j (``fleet.embedded.neo4j``) as a fault test uses it: SIGKILLed mid-life and
started again on the same port and data, the graph and its position come back; a new password
takes effect on a restart; the server's own files are where it was told. And while it first
starts, no login with Neo4j's default password works and the configured one is never refused;
while it restarts with a new password, the old one never logs in, for either user."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ServiceUnavailable

from fleet.embedded._process import port_open
from fleet.embedded.neo4j import (
    LAUNCHER_CLASS,
    QUICK_START_JVM,
    Neo4jServer,
    generate_password,
    neo4j_jars,
)
from projectors import GraphProjection
from projectors.graph.neo4j import Neo4jGraph
from projectors.verify import verify
from tests.fixtures.neo4j import START_TIMEOUT_S, require_neo4j
from tests.unit.projectors import scenarios

# Three starts of a JVM: 30 s on a quiet 2-core machine, minutes on a loaded one.
pytestmark = pytest.mark.timeout(3 * START_TIMEOUT_S + 120)


DEFAULT = ("neo4j", "neo4j")  # Neo4j's well-known initial login


def _logins_while_starting(
    server: Neo4jServer, tries: dict[str, tuple[str, str]]
) -> Counter[tuple[str, str]]:
    """Spawn ``server`` and log in over and over, from when its port opens until it is ready,
    with each of ``tries``: (which, outcome) counts."""
    driver_log = logging.getLogger("neo4j")
    level = driver_log.level
    driver_log.setLevel(logging.CRITICAL)  # the driver's failed logins, expected here
    seen: Counter[tuple[str, str]] = Counter()
    server.spawn()
    server_ready = False
    try:
        while not server_ready:
            assert server.running(), server.log_tail()
            server_ready = server.is_ready()  # then one more round: the port was open all along
            if not port_open(server.host, server.port):
                time.sleep(0.02)  # a poll of the port while the JVM starts
                continue
            for which, auth in tries.items():
                try:
                    with GraphDatabase.driver(server.uri, auth=auth, connection_timeout=2) as d:
                        d.verify_connectivity()
                    seen[which, "logged in"] += 1
                except AuthError:
                    seen[which, "refused"] += 1
                except ServiceUnavailable:
                    seen[which, "unavailable"] += 1
    finally:
        driver_log.setLevel(level)
    return seen


def test_the_class_archive_set_up_recorded_maps_with_the_servers_class_path(
    tmp_path: Path,
) -> None:
    """Every start maps the archive (``fleet.embedded.neo4j_archive``) rather than loading
    Neo4j's classes: a JVM told ``-Xshare:on`` refuses to start when it cannot map it (a stale
    archive, another class path), where the server's own starts would quietly go slow."""
    require_neo4j()
    jars = neo4j_jars()
    if not jars.class_archive.is_file():
        why = f"no class archive in {jars.classes}: run `make neo4j` with Fleet installed"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    server = Neo4jServer(tmp_path / "neo4j", password=generate_password())
    argv = server.argv[: server.argv.index(LAUNCHER_CLASS)]
    assert f"-XX:SharedArchiveFile={jars.class_archive}" in argv
    out = subprocess.run(
        [*argv, "-Xshare:on", "-Xlog:cds=info", "-version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_a_killed_server_restarts_on_its_port_with_its_graph_and_takes_a_new_password(
    tmp_path: Path,
) -> None:
    require_neo4j()
    server = Neo4jServer(
        tmp_path / "neo4j", password=generate_password(), jvm_options=QUICK_START_JVM
    )
    try:
        _first_start_and_restarts(server)
    finally:
        server.stop()


def _first_start_and_restarts(server: Neo4jServer) -> None:
    # Bolt opens seconds before the databases answer. Before the launcher wrote the initial
    # user file, the built-in user had the password "neo4j" then (anyone could log in and change
    # it) and the configured password was refused, for 7 s of a 17 s start on two cores.
    seen = _logins_while_starting(server, {"configured": server.auth, "default": DEFAULT})
    server.wait_ready(timeout=START_TIMEOUT_S)
    assert seen["configured", "logged in"] > 0, seen
    assert seen["configured", "refused"] == 0, seen
    assert seen["default", "logged in"] == 0, seen
    assert not list((server.data_dir / "data" / "dbms").glob("auth*")), "the initial file stays"
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    events = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 100)
    ]
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        graph = Neo4jGraph(driver)
        graph.ensure_schema()
        GraphProjection(graph).apply_batch(events, base=0)
        assert graph.position("graph") == run.position

    uri, data = server.uri, server.data_dir
    server.kill()  # SIGKILL: no checkpoint, the store recovers from its transaction log
    assert not server.running()
    # What a first start killed before READY leaves (the initial user file: a password hash).
    leftover = data / "data" / "dbms" / "auth.ini"
    leftover.write_text("neo4j:SHA-256,00,00,1024:\n")
    server.start(timeout=START_TIMEOUT_S)
    assert (server.uri, server.data_dir) == (uri, data)
    assert not leftover.exists(), "a later start leaves the initial user file"
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        graph = Neo4jGraph(driver)
        assert graph.position("graph") == run.position
        assert verify(app, graph=graph).ok
    assert (data / "data" / "databases" / "neo4j").is_dir()
    log = (data / "logs" / "debug.log").read_text()
    # Started as Neo4j's own launcher starts it: the page cache on its direct buffers, the
    # transaction logs advised to the kernel (fleet.embedded.neo4j.DISTRIBUTION_JVM).
    assert "fallback mode" not in log
    assert "Incorrect file descriptor" not in log

    # What the next `fleet up` with another NEO4J_PASSWORD (and here another NEO4J_USER) does:
    # the same data, a new password. Bolt also opened seconds before the databases answered
    # here, and the old password logged in until then (the built-in user's, for good, once
    # another user was configured): the launcher now sets a new one with Bolt closed.
    old = server.auth
    server.stop()
    changed = Neo4jServer(
        data,
        password=generate_password(),
        user="fleet",
        port=server.port,
        jvm_options=QUICK_START_JVM,
    )
    password = changed.auth[1]
    try:
        seen = _logins_while_starting(
            changed, {"old": old, "new": changed.auth, "built-in, new": ("neo4j", password)}
        )
        changed.wait_ready(timeout=START_TIMEOUT_S)
        assert seen["old", "logged in"] == 0, seen
        assert seen["new", "logged in"] > 0, seen  # the last round, at least
        with GraphDatabase.driver(changed.uri, auth=changed.auth) as driver:
            assert Neo4jGraph(driver).position("graph") == run.position
        for auth in (old, ("fleet", old[1])):
            with GraphDatabase.driver(changed.uri, auth=auth) as driver, pytest.raises(AuthError):
                driver.verify_connectivity()
        with GraphDatabase.driver(changed.uri, auth=("neo4j", password)) as driver:
            driver.verify_connectivity()  # the built-in user has the configured password too
        record = data / "data" / "dbms" / "fleet-password"
        assert record.stat().st_mode & 0o777 == 0o600
        assert password not in record.read_text()  # a salted hash, as the system graph holds
    finally:
        changed.stop()
