"""The private Neo4j's class archive: recorded once at set-up, mapped by every start after it.

A start of the private server spends most of its time in the JVM loading, parsing and verifying
Neo4j's classes, every time. The JVM's class-data sharing writes the classes one run loaded to a
file (``-XX:ArchiveClassesAtExit``, at a clean exit) that later runs map instead
(``-XX:SharedArchiveFile``, which ``Neo4jServer`` adds whenever the file is there). The recording
run starts the server and projects one deliberation through Fleet's own statements, so that the
Cypher planner's and runtime's classes are in the archive too, then stops it with SIGTERM.

Time to ready on a 2-core AMD EPYC, alternated, three starts each: 10.0-11.5 s with the archive
against 16.2-16.9 s without (the distribution's options, as ``fleet up`` runs it), 8.6-9.5 s
against 14.1-15.4 s (``QUICK_START_JVM``, as the tests run it). The archive is ~115 MB and
belongs to one JDK build and one set of jars: the JVM checks both when it maps it and, when either
changed, starts without it as before (``scripts/neo4j-jars.sh`` then records it again: its stamp
names the JDK).

``python -m fleet.embedded.neo4j_archive [HOME]`` records it (``scripts/neo4j-jars.sh`` runs it).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from neo4j import GraphDatabase

from fleet.embedded.neo4j import (
    QUICK_START_JVM,
    Neo4jServer,
    Neo4jSetupError,
    generate_password,
    neo4j_jars,
)

__all__ = ["build_class_archive"]


def build_class_archive(home: Path | None = None) -> Path:
    """Record the class archive of the jars under ``home`` (``default_neo4j_home()`` when None)
    and move it into place whole; the path it has now.

    Raises:
        Neo4jSetupError: the jars are missing, or the JVM wrote no archive.
    """
    jars = neo4j_jars(home)
    target = jars.class_archive
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    record = f"-XX:ArchiveClassesAtExit={partial}"
    try:
        with tempfile.TemporaryDirectory(prefix="fleet-neo4j-archive-") as data:
            server = Neo4jServer(
                Path(data),
                password=generate_password(),
                home=home,
                jvm_options=(*QUICK_START_JVM, record),
            )
            try:
                server.start()
                _project_one_deliberation(server)
            finally:
                server.stop()  # SIGTERM: the JVM writes the archive as it exits
            log = server.log_tail()
        if not partial.is_file():
            raise Neo4jSetupError(f"the JVM wrote no class archive to {partial}:\n{log}")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)  # a failed recording leaves nothing half made
    return target


def _project_one_deliberation(server: Neo4jServer) -> None:
    """A completed deliberation through ``GraphProjection``, event by event and as one batch:
    the statements every Fleet node runs, so their classes are recorded."""
    from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation
    from application.app import FleetApplication
    from projectors import GraphProjection
    from projectors.graph.neo4j import Neo4jGraph

    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = Deliberation.request(
        task_id="class-archive",
        task="Write a function that adds two numbers",
        role="DEV",
        num_agents=3,
        rounds=1,
        requested_at=datetime.now(UTC),
        timeout_seconds=60,
        rubric="correct",
        plan_id="plan-archive",
        story_id="story-archive",
        requested_by="set-up",
    )
    d.start()
    for i, agent in enumerate(d.agents):
        answer = AgentAnswer(
            content=f"def add(a, b): return a + b  # {i}", model="m", tokens=9, latency_ms=1
        )
        d.receive_proposal(agent_id=AgentId(agent), round=0, answer=answer)
    for agent in d.agents:
        check = CheckOutcome(check_type="lint", passed=True, score=0.9, message="ok")
        d.score(agent_id=AgentId(agent), score=0.9, checks=[check])
    d.complete()
    app.save(d)
    events = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 100)
    ]
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        graph = Neo4jGraph(driver)
        graph.ensure_schema()
        projection = GraphProjection(graph)
        for event, position in events:
            projection.apply(event, position)
        projection.reset()
        projection.apply_batch(events, base=0)


def main(argv: list[str]) -> int:
    home = Path(argv[0]) if argv else None
    started = time.monotonic()
    try:
        path = build_class_archive(home)
    except Neo4jSetupError as e:
        print(f"neo4j-archive: {e}", file=sys.stderr)
        return 1
    size = path.stat().st_size / 2**20
    print(f"neo4j-archive: {path} ({size:.0f} MiB) in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
