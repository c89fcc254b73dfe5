"""The Neo4j adapter's transaction functions, on a stand-in for the driver's transaction.

No Neo4j server runs here; the stand-in records what the adapter sends, so these tests pin the
order (lock the position, compare, write, move) and the rejection of a passed position.
"""

from __future__ import annotations

from typing import Any

import pytest

from projectors.errors import PositionMovedError, ProjectionFencedError, ReadOnlyQueryError
from projectors.fence import Fence
from projectors.graph.neo4j import CONSTRAINTS, LAYER_QUERY, Neo4jGraph, _apply_tx
from projectors.graph.statements import VOCABULARY, Statement


class _Result:
    def __init__(self, record: dict[str, Any] | None) -> None:
        self._record = record

    def single(self) -> dict[str, Any] | None:
        return self._record

    def consume(self) -> None:
        return None


class FakeTransaction:
    """Stands in for ``neo4j.ManagedTransaction``: a stored position and a log of what ran."""

    def __init__(self, position: int | None) -> None:
        self.position = position
        self.epoch: int | None = None
        self.owner: str | None = None
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def _stored(self) -> dict[str, Any]:
        stored = {"position": self.position or 0, "epoch": self.epoch, "owner": self.owner}
        return {**stored, "lease_until": None}

    def run(self, cypher: str, params: dict[str, Any] | None = None, **kw: Any) -> _Result:
        self.ran.append((cypher, {**(params or {}), **kw}))
        if "RETURN x.position" in cypher:
            return _Result(self._stored())
        if cypher == LAYER_QUERY:  # the server's check, as the query states it
            found = []
            for lock in (params or {})["b"]["lock"]:
                fenced = (lock["epoch"], lock["owner"])
                ok = (self.position or 0) == lock["base"] and (
                    lock["epoch"] is None or (self.epoch, self.owner) == fenced
                )
                found.append({**self._stored(), "ok": ok})
            return _Result({"locked": found})
        return _Result(None)


_AGENT = next(text for text in VOCABULARY if "MERGE (a:Agent {id: r.agent_id})" in text)
_SLOT = f"s{VOCABULARY.index(_AGENT)}"


def test_apply_locks_compares_writes_then_moves_the_position() -> None:
    """Without the position the batch was staged past, the lock is a query of its own; the
    batch runs as the layer query, its rows in their statement's slot (the others empty); the
    same query moves the position, in its last subquery."""
    tx = FakeTransaction(position=4)
    a, b = (Statement(_AGENT, {"id": x}, writes=(f"agent:{x}",)) for x in "ab")
    batch = [(5, [a]), (6, [b])]
    assert _apply_tx(tx, "graph", batch) == 2  # type: ignore[arg-type]
    assert "SET x.position = coalesce" in tx.ran[0][0]  # the lock comes first
    cypher, params = tx.ran[1]
    assert cypher == LAYER_QUERY
    assert params["b"][_SLOT] == [{"id": "a"}, {"id": "b"}]  # one UNWIND for both
    assert len(params["b"]) == len(VOCABULARY) + 2  # each statement's slot, position, lock
    assert not any(v for k, v in params["b"].items() if k not in (_SLOT, "position"))
    assert params["b"]["position"] == [{"name": "graph", "position": 6, "lease_until": None}]
    assert LAYER_QUERY.rstrip().endswith(
        "SET x.position = p.position, x.lease_until = coalesce(p.lease_until, x.lease_until)"
        "\n}\nRETURN locked"
    )
    assert len(tx.ran) == 2


def test_a_row_that_must_follow_a_later_statement_takes_a_second_layer_query() -> None:
    tx = FakeTransaction(position=0)
    first = Statement(VOCABULARY[-3], {"id": "x"}, writes=("k",))
    then = Statement(_AGENT, {"id": "a"}, reads=("k",))  # listed earlier, must run after
    assert _apply_tx(tx, "graph", [(1, [first, then])]) == 1  # type: ignore[arg-type]
    layers = [params["b"] for cypher, params in tx.ran if cypher == LAYER_QUERY]
    assert len(layers) == 2
    assert layers[0][f"s{len(VOCABULARY) - 3}"] == [{"id": "x"}] and not layers[0][_SLOT]
    assert layers[1][_SLOT] == [{"id": "a"}]
    assert not layers[0]["position"] and layers[1]["position"][0]["position"] == 1  # the last


def test_a_batch_that_writes_nothing_still_moves_the_position() -> None:
    tx = FakeTransaction(position=0)
    assert _apply_tx(tx, "graph", [(1, []), (2, [])]) == 2  # type: ignore[arg-type]
    ((cypher, params),) = tx.ran[1:]
    assert cypher == LAYER_QUERY and params["b"]["position"][0]["position"] == 2


@pytest.mark.parametrize("stored", [5, 9])
def test_apply_rejects_a_passed_position(stored: int) -> None:
    tx = FakeTransaction(position=stored)
    assert not _apply_tx(tx, "graph", [(5, [Statement(_AGENT, {"id": "a"})])])  # type: ignore[arg-type]
    assert len(tx.ran) == 1


def test_a_runner_batch_is_one_query_that_locks_checks_writes_and_moves() -> None:
    """With the position the batch was staged past (``base``), the lock and its check are the
    first layer query's first subquery: one round trip, not two."""
    tx = FakeTransaction(position=4)
    tx.epoch, tx.owner = 3, "me"
    batch = [(5, [Statement(_AGENT, {"id": "a"})])]
    assert _apply_tx(tx, "graph", batch, 4, Fence(owner="me", epoch=3, lease_ms=1000)) == 1  # type: ignore[arg-type]
    ((cypher, params),) = tx.ran
    assert cypher == LAYER_QUERY
    assert params["b"]["lock"] == [{"name": "graph", "base": 4, "epoch": 3, "owner": "me"}]
    assert params["b"][_SLOT] == [{"id": "a"}] and params["b"]["position"][0]["position"] == 5


def test_only_the_first_layer_takes_the_lock() -> None:
    tx = FakeTransaction(position=0)
    first = Statement(VOCABULARY[-3], {"id": "x"}, writes=("k",))
    then = Statement(_AGENT, {"id": "a"}, reads=("k",))
    assert _apply_tx(tx, "graph", [(1, [first, then])], 0) == 1  # type: ignore[arg-type]
    assert [len(params["b"]["lock"]) for _, params in tx.ran] == [1, 0]


def test_a_fenced_or_moved_writer_writes_nothing() -> None:
    """The query's check refuses (its statements write nothing); the adapter's raises, which
    rolls the transaction back, and no later layer is sent."""
    tx = FakeTransaction(position=4)
    tx.epoch, tx.owner = 3, "new"
    first = Statement(VOCABULARY[-3], {"id": "x"}, writes=("k",))
    batch = [(5, [first, Statement(_AGENT, {"id": "a"}, reads=("k",))])]  # two layers
    with pytest.raises(ProjectionFencedError):
        _apply_tx(tx, "graph", batch, 4, Fence(owner="old", epoch=2, lease_ms=1000))  # type: ignore[arg-type]
    with pytest.raises(PositionMovedError):
        _apply_tx(tx, "graph", batch, 3, Fence(owner="new", epoch=3, lease_ms=1000))  # type: ignore[arg-type]
    assert len(tx.ran) == 2  # one query each


def test_a_check_that_disagrees_with_the_query_raises() -> None:
    """Should the query refuse a batch that the adapter's check passes, the batch is not
    counted as written."""
    tx = FakeTransaction(position=4)
    real = tx.run

    def refusing(cypher: str, params: dict[str, Any] | None = None, **kw: Any) -> _Result:
        result = real(cypher, params, **kw)
        record = result.single()
        if record and "locked" in record:
            return _Result({"locked": [{**found, "ok": False} for found in record["locked"]]})
        return result

    tx.run = refusing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="lock query refused"):
        _apply_tx(tx, "graph", [(5, [Statement(_AGENT, {"id": "a"})])], 4)  # type: ignore[arg-type]


class FakeSession:
    """Stands in for ``neo4j.Session``: ``run`` is an auto-commit query on the transaction's
    state, ``execute_write`` a managed transaction on it."""

    def __init__(self, tx: FakeTransaction) -> None:
        self.tx = tx
        self.managed = 0

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, cypher: str, params: dict[str, Any] | None = None) -> _Result:
        return self.tx.run(cypher, params)

    def execute_write(self, work: Any, *args: Any) -> Any:
        self.managed += 1
        return work(self.tx, *args)


class FakeDriver:
    def __init__(self, session: FakeSession) -> None:
        self._session = session

    def session(self, **_: Any) -> FakeSession:
        return self._session


def test_a_one_layer_runner_batch_is_one_auto_committed_query() -> None:
    """A live batch (one layer, staged past a known position) is one query that the server
    commits as it answers: no ``BEGIN``, no ``COMMIT``, no managed transaction. A batch of
    two layers is one transaction, so that a reader never sees half of it."""
    tx = FakeTransaction(position=4)
    session = FakeSession(tx)
    graph = Neo4jGraph(FakeDriver(session))  # type: ignore[arg-type]
    assert graph.apply_batch("graph", [(5, [Statement(_AGENT, {"id": "a"})])], base=4) == 1
    ((cypher, params),) = tx.ran
    assert cypher == LAYER_QUERY and params["b"]["lock"][0]["base"] == 4
    assert session.managed == 0
    first = Statement(VOCABULARY[-3], {"id": "x"}, writes=("k",))
    two = [(5, [first, Statement(_AGENT, {"id": "a"}, reads=("k",))])]
    assert graph.apply_batch("graph", two, base=4) == 1
    assert session.managed == 1 and len(tx.ran) == 3
    with pytest.raises(PositionMovedError):  # refused by the query; the adapter raises
        graph.apply_batch("graph", [(6, [Statement(_AGENT, {"id": "b"})])], base=5)


def test_constraints_cover_every_merge_key() -> None:
    text = "\n".join(CONSTRAINTS)
    for label in ("Plan", "Deliberation", "Agent", "Proposal", "Event"):
        assert f"(n:{label}) REQUIRE n.id IS UNIQUE" in text
    assert "(n:Projection) REQUIRE n.name IS UNIQUE" in text


def test_queries_are_guarded_before_any_connection() -> None:
    neo4j = pytest.importorskip("neo4j")
    driver = neo4j.GraphDatabase.driver("neo4j://127.0.0.1:1")  # never connects
    graph = Neo4jGraph(driver, owns_driver=True)
    with pytest.raises(ReadOnlyQueryError):
        graph.query("MATCH (n) DETACH DELETE n")
    graph.close()
    graph.close()


def test_a_layers_rows_are_not_turned_into_text_for_a_debug_line_nobody_reads() -> None:
    """The driver formats the ``repr`` of a query's parameters whether or not debug logging is
    on: a layer's rows say how many they are, not what they hold, and still pack as a map."""
    from neo4j._codec.packstream.v1 import Packer, _rust_pack

    from projectors.graph.neo4j import _Rows

    plain = {"s0": [{"id": "a" * 1000}], "s1": []}
    rows = _Rows(plain)
    assert repr({"b": rows}) == "{'b': <1 rows>}"
    hooks = Packer._inject_hooks(None)
    assert _rust_pack({"b": rows}, hooks) == _rust_pack({"b": plain}, hooks)
