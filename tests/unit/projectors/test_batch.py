"""The catch-up planner: fewer executions, and never an order that changes the result."""

from __future__ import annotations

from aggregates import Deliberation
from projectors.graph.batch import plan
from projectors.graph.statements import ORDERED, SAME, Statement, statements_for
from tests.unit.projectors import scenarios


def _rows(
    cypher: str,
    x: str,
    *,
    reads: tuple[str, ...] = (),
    writes: tuple[str, ...] = (),
    policy: str = ORDERED,
) -> Statement:
    return Statement(cypher, {"x": x}, reads=reads, writes=writes, policy=policy)


def test_a_read_follows_the_write_and_a_write_follows_the_read() -> None:
    create, score, link = "CREATE", "SCORE", "LINK"
    executions = plan(
        [
            _rows(create, "p0", writes=("props:a",)),
            _rows(link, "p0", reads=("props:a",)),
            _rows(score, "s0", writes=("props:a",)),  # after the link read what it changes
            _rows(create, "p1", writes=("props:a",)),  # a revision after the score
            _rows(score, "s1", writes=("props:a",)),
        ]
    )
    assert [(e.cypher, [r["x"] for r in e.rows]) for e in executions] == [
        (create, ["p0"]),
        (link, ["p0"]),
        (score, ["s0"]),
        (create, ["p1"]),
        (score, ["s1"]),
    ]


def test_rows_touching_different_things_share_one_execution() -> None:
    executions = plan(
        [
            _rows("CREATE", "a", writes=("props:a",)),
            _rows("LINK", "a", reads=("props:a",)),
            _rows("CREATE", "b", writes=("props:b",)),
            _rows("LINK", "b", reads=("props:b",)),
        ]
    )
    assert [(e.cypher, len(e.rows)) for e in executions] == [("CREATE", 2), ("LINK", 2)]


def test_same_rows_share_but_follow_other_writers() -> None:
    executions = plan(
        [
            _rows("STATUS", "1", writes=("state:d",), policy=SAME),
            _rows("STATUS", "2", writes=("state:d",), policy=SAME),
            _rows("COMPLETE", "3", writes=("state:d",)),
        ]
    )
    assert [(e.cypher, len(e.rows)) for e in executions] == [("STATUS", 2), ("COMPLETE", 1)]


def test_a_row_naming_nothing_is_a_barrier() -> None:
    executions = plan(
        [
            _rows("A", "1", writes=("k1",)),
            _rows("B", "2"),
            _rows("A", "3", writes=("k2",)),
        ]
    )
    assert [e.cypher for e in executions] == ["A", "B", "A"]


def test_one_deliberation_is_a_few_executions_deep_not_one_per_step() -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app, late=False)
    events = list(app.repository.event_store.get(run.deliberation_id))
    statements = [s for i, e in enumerate(events) for s in statements_for(e, i + 1)]
    executions = plan(statements)
    texts = {s.cypher for s in statements}
    assert len(executions) == len(texts)  # each statement runs once, for all its rows
    assert any(isinstance(e, Deliberation.ProposalScored) for e in events)
