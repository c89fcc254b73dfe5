"""A crashed projector's work moves in seconds, never while its owner may still write.

* Embedded graph: a projector killed holding a long lease is not waited out by its restart. The
  engine's file lock lets one process open the database, so a lease granted by another process
  belongs to a dead one; inside one process a live owner's lease still holds.
* Neo4j graph (a server several processes reach, so only the lease can say, as for Valkey): a
  new owner waits out the old one's lease, then takes the next epoch.
* Valkey cache (shared by processes, so only the lease can say): a standby takes over within
  about a lease of the owner's last renewal, and not before.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from projectors import CacheProjection, ProjectorRunner
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.neo4j import Neo4jGraph
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[3]
HOUR_MS = 3_600_000

# Claims with an hour's lease, then dies without releasing it (os._exit: no clean-up).
_CLAIM_AND_DIE = """
import os, sys
from projectors.graph.ladybug import LadybugGraph
g = LadybugGraph(sys.argv[1])
print(g.claim("graph", "killed", 3_600_000), flush=True)
os._exit(0)
"""


def test_a_restart_on_the_embedded_graph_does_not_wait_out_a_dead_process_lease(
    tmp_path: Path,
) -> None:
    path = tmp_path / "graph" / "fleet.lbug"
    out = subprocess.run(
        [sys.executable, "-c", _CLAIM_AND_DIE, str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "1"
    graph = LadybugGraph(path)
    try:
        assert graph.stored("graph").owner == "killed"
        assert graph.claim("graph", "restarted", HOUR_MS) == 2, "waited out a dead owner"
        assert graph.claim("graph", "other", HOUR_MS) is None, "took a live owner's lease"
        assert graph.claim("graph", "restarted", HOUR_MS) == 2  # renewing keeps the epoch
    finally:
        graph.close()


def test_on_neo4j_a_new_owner_waits_out_the_old_owners_lease(neo4j_graph: Neo4jGraph) -> None:
    lease_ms = 1_500
    assert neo4j_graph.claim("graph", "killed", lease_ms) == 1
    t0 = time.monotonic()
    assert neo4j_graph.claim("graph", "restarted", HOUR_MS) is None, "took a live owner's lease"
    while (epoch := neo4j_graph.claim("graph", "restarted", HOUR_MS)) is None:
        assert time.monotonic() - t0 < 10, "never took over"
        time.sleep(0.05)
    assert epoch == 2 and time.monotonic() - t0 >= lease_ms / 1000 - 0.2
    assert neo4j_graph.claim("graph", "killed", lease_ms) is None  # the old owner is fenced


def test_a_standby_takes_a_silent_owners_cache_within_about_a_lease(
    board: ValkeyDeliberationBoard,
) -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    projection = CacheProjection(board)
    lease_ms = 1_000
    assert projection.claim("crashed", lease_ms) is not None  # its last renewal, then silence
    silent_since = time.monotonic()
    standby = ProjectorRunner(app, projection, owner="standby", lease_ms=lease_ms)
    standby.start()
    try:
        standby.wait(run.position, timeout=10)
        took = time.monotonic() - silent_since
    finally:
        standby.close()
    assert lease_ms / 1000 <= took < lease_ms / 1000 + 1.0, f"took over after {took:.2f} s"
