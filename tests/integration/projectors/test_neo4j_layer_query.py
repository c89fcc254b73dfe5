"""The Neo4j layer query's own lock and check, on a real server.

A runner's batch is one query per layer: the first takes the ``Projection`` node's lock and
compares the stored position and fence with the batch's, and its statements write only when
they match. The adapter checks what the query found again and raises, which rolls the
transaction back; these tests run the query alone, in auto-commit transactions that nothing
rolls back, so that they fail if the query's own check stops holding a stale writer back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from neo4j import Driver, Session
from neo4j.exceptions import TransientError

from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence
from projectors.graph.neo4j import _NO_ROWS, LAYER_QUERY, Neo4jGraph, _claim_tx
from projectors.graph.statements import VOCABULARY, Statement

pytestmark = pytest.mark.timeout(120)

_AGENT = next(text for text in VOCABULARY if "MERGE (a:Agent {id: r.agent_id})" in text)
_SLOT = f"s{VOCABULARY.index(_AGENT)}"


def _layer(driver: Driver, agent: str, lock: dict[str, Any]) -> dict[str, Any]:
    rows = {
        **_NO_ROWS,
        _SLOT: [{"agent_id": agent, "role": "DEV"}],
        "lock": [lock],
        "position": [{"name": "graph", "position": 9, "lease_until": None}],
    }
    with driver.session() as session:
        record = session.run(LAYER_QUERY, {"b": rows}).single()
    assert record is not None
    (found,) = record["locked"]
    return dict(found)


def _agents(driver: Driver) -> list[str]:
    with driver.session() as session:
        return [r["id"] for r in session.run("MATCH (a:Agent) RETURN a.id AS id ORDER BY id")]


@pytest.mark.parametrize(
    ("base", "fence", "why"),
    [
        (5, None, "the stored position is 0, not 5"),
        (0, {"epoch": 7, "owner": "old"}, "the fence's epoch is 1"),
        (0, {"epoch": 1, "owner": "other"}, "the fence's owner is another"),
    ],
)
def test_a_stale_layer_writes_nothing_and_says_what_it_found(
    neo4j_graph: Neo4jGraph,
    neo4j_driver: Driver,
    base: int,
    fence: dict[str, Any] | None,
    why: str,
) -> None:
    assert neo4j_graph.claim("graph", "owner", 60_000) == 1
    lock = {"name": "graph", "base": base, "epoch": None, "owner": None, **(fence or {})}
    found = _layer(neo4j_driver, "intruder", lock)
    assert found["ok"] is False, why
    assert (found["position"], found["epoch"], found["owner"]) == (0, 1, "owner")
    assert _agents(neo4j_driver) == []  # committed, yet no statement wrote
    assert neo4j_graph.stored("graph").position == 0


def test_a_current_layer_writes_and_moves_the_position(
    neo4j_graph: Neo4jGraph, neo4j_driver: Driver
) -> None:
    assert neo4j_graph.claim("graph", "owner", 60_000) == 1
    lock = {"name": "graph", "base": 0, "epoch": 1, "owner": "owner"}
    assert _layer(neo4j_driver, "a1", lock)["ok"] is True
    assert _agents(neo4j_driver) == ["a1"]
    assert neo4j_graph.stored("graph").position == 9


def test_a_runner_batch_past_a_moved_position_or_a_lost_fence_is_refused(
    neo4j_graph: Neo4jGraph, neo4j_driver: Driver
) -> None:
    """Through the adapter: the refusal raises the error the runner acts on, and the batch's
    statements are not in the graph."""
    epoch = neo4j_graph.claim("graph", "owner", 60_000)
    assert epoch == 1
    fence = Fence(owner="owner", epoch=epoch, lease_ms=60_000)
    batch = [(1, [Statement(_AGENT, {"agent_id": "a1", "role": "DEV"})])]
    assert neo4j_graph.apply_batch("graph", batch, base=0, fence=fence) == 1
    late = [(2, [Statement(_AGENT, {"agent_id": "a2", "role": "DEV"})])]
    with pytest.raises(PositionMovedError):
        neo4j_graph.apply_batch("graph", late, base=0, fence=fence)
    with pytest.raises(ProjectionFencedError):
        neo4j_graph.apply_batch("graph", late, base=1, fence=Fence("owner", 0, 60_000))
    assert _agents(neo4j_driver) == ["a1"]
    assert neo4j_graph.stored("graph").position == 1
    assert neo4j_graph.apply_batch("graph", late, base=1, fence=fence) == 1
    assert _agents(neo4j_driver) == ["a1", "a2"]


def _deadlocks_in_pairs(driver: Driver, pairs: int, lock: Callable[[Session, str], None]) -> int:
    """Run ``lock`` from two sessions at once, ``pairs`` times, with no retry: how many of the
    attempts Neo4j aborted as a deadlock."""
    barrier = threading.Barrier(2)
    deadlocks = [0, 0]
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with driver.session() as session:
                for _ in range(pairs):
                    barrier.wait(timeout=30)
                    try:
                        lock(session, f"writer-{i}")
                    except TransientError as e:
                        if "DeadlockDetected" not in (e.code or ""):
                            raise
                        deadlocks[i] += 1
        except BaseException as e:
            failures.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures
    return sum(deadlocks)


def test_two_claims_at_once_never_deadlock(neo4j_graph: Neo4jGraph, neo4j_driver: Driver) -> None:
    """Takeovers: two runners claim the same projection at the same moment. Each claim takes the
    node's lock before it reads; a read first (``MERGE``) let both hold a shared lock and then
    wait for each other (90 of 200 attempts), which cost the aborted one a driver retry of ~1 s."""

    def claim(session: Session, owner: str) -> None:
        with session.begin_transaction() as tx:
            _claim_tx(tx, "graph", owner, -1_000)  # a lease already over: every claim writes
            tx.commit()

    assert _deadlocks_in_pairs(neo4j_driver, 100, claim) == 0
    taken = neo4j_graph.stored("graph")
    assert taken.owner in ("writer-0", "writer-1") and (taken.epoch or 0) > 2  # they took turns


def test_two_first_layers_at_once_never_deadlock(
    neo4j_graph: Neo4jGraph, neo4j_driver: Driver
) -> None:
    """Two writers of one projection (a fenced one not yet stopped, and its successor) send
    their batches' first layers at the same moment: each locks the node before it reads."""
    assert neo4j_graph.claim("graph", "owner", 60_000) == 1

    def layer(session: Session, owner: str) -> None:
        base = neo4j_graph.stored("graph").position  # both writers of a pair read the same
        rows = {
            **_NO_ROWS,
            "lock": [{"name": "graph", "base": base, "epoch": None, "owner": None}],
            "position": [{"name": "graph", "position": base + 1, "lease_until": None}],
        }
        session.run(LAYER_QUERY, {"b": rows}).consume()

    assert _deadlocks_in_pairs(neo4j_driver, 100, layer) == 0
    assert neo4j_graph.stored("graph").position >= 100  # one of each pair moved it at least
