"""The private Neo4j (``fleet.embedded.neo4j``) as a fault test uses it: SIGKILLed mid-life and
started again on the same port and data, the graph and its position come back; a new password
takes effect on a restart; the server's own files are where it was told."""

from __future__ import annotations

import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from fleet.embedded.neo4j import QUICK_START_JVM, Neo4jServer, generate_password
from projectors import GraphProjection
from projectors.graph.neo4j import Neo4jGraph
from projectors.verify import verify
from tests.fixtures.neo4j import START_TIMEOUT_S
from tests.unit.projectors import scenarios

# Three starts of a JVM: 30 s on a quiet 2-core machine, minutes on a loaded one.
pytestmark = pytest.mark.timeout(3 * START_TIMEOUT_S + 120)


def test_a_killed_server_restarts_on_its_port_with_its_graph_and_takes_a_new_password(
    own_neo4j_server: Neo4jServer,
) -> None:
    server = own_neo4j_server
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
    server.start(timeout=START_TIMEOUT_S)
    assert (server.uri, server.data_dir) == (uri, data)
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

    # What the next `fleet up` with another NEO4J_PASSWORD does: the same data, a new password.
    old = server.auth
    server.stop()
    changed = Neo4jServer(
        data, password=generate_password(), port=server.port, jvm_options=QUICK_START_JVM
    )
    changed.start(timeout=START_TIMEOUT_S)
    try:
        with GraphDatabase.driver(changed.uri, auth=changed.auth) as driver:
            assert Neo4jGraph(driver).position("graph") == run.position
        with GraphDatabase.driver(changed.uri, auth=old) as driver, pytest.raises(AuthError):
            driver.verify_connectivity()
    finally:
        changed.stop()
