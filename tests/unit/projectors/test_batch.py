"""The catch-up planner: fewer executions, and never an order that changes the result."""

from __future__ import annotations

import pytest

from aggregates import Deliberation
from projectors.graph import statements as vocabulary_module
from projectors.graph.batch import Execution, Layers, plan, plan_layers
from projectors.graph.statements import ORDERED, SAME, VOCABULARY, Statement, statements_for
from tests.unit.projectors import scenarios


def _executions(layers: Layers) -> list[Execution]:
    """A layered plan as the greedy plan's form: one execution per statement and layer."""
    return [
        Execution(VOCABULARY[i], rows)
        for layer in layers.layers
        for i, rows in sorted(layer.items())
    ]


def _count(layers: Layers) -> int:
    return sum(len(rows) for layer in layers.layers for rows in layer.values())


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


# ---------------------------------------------------------------- layers (Neo4j's plan)

_ORDER = {"CREATE": 0, "LINK": 1, "SCORE": 2}


def _slots(layers: Layers) -> list[tuple[int, str, list[str]]]:
    names = {i: text for text, i in _ORDER.items()}
    return [
        (k, names[i], [r["x"] for r in rows])
        for k, layer in enumerate(layers.layers)
        for i, rows in sorted(layer.items())
    ]


def test_layers_keep_the_order_a_read_and_a_write_need() -> None:
    layers = plan_layers(
        [
            _rows("CREATE", "p0", writes=("props:a",)),
            _rows("LINK", "p0", reads=("props:a",)),
            _rows("SCORE", "s0", writes=("props:a",)),
            _rows("CREATE", "p1", writes=("props:a",)),  # a revision: after the score
            _rows("SCORE", "s1", writes=("props:a",)),
            _rows("CREATE", "q0", writes=("props:b",)),  # another agent's: the first slot
        ],
        _ORDER,
    )
    assert _slots(layers) == [
        (0, "CREATE", ["p0", "q0"]),
        (0, "LINK", ["p0"]),
        (0, "SCORE", ["s0"]),
        (1, "CREATE", ["p1"]),
        (1, "SCORE", ["s1"]),
    ]


def test_a_row_naming_nothing_is_a_barrier_in_layers_too() -> None:
    layers = plan_layers(
        [_rows("LINK", "1", writes=("k1",)), _rows("CREATE", "2"), _rows("SCORE", "3")],
        _ORDER,
    )
    assert _slots(layers) == [(0, "LINK", ["1"]), (1, "CREATE", ["2"]), (1, "SCORE", ["3"])]


def test_a_live_batch_of_several_deliberations_is_one_layer_of_the_vocabulary() -> None:
    """A whole deliberation of each kind as one batch: one layer, so that Neo4j writes it with
    one query; and the same rows as the greedy plan runs. A proposal that arrives late, after
    the scores, changes what they wrote: it takes a second layer."""
    app = scenarios.popo_app()
    scenarios.completed(app, late=False)
    scenarios.timed_out(app)
    scenarios.all_failed(app)
    events = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 1000)
    ]
    statements = [s for e, p in events for s in statements_for(e, p)]
    vocabulary = {text: i for i, text in enumerate(VOCABULARY)}
    layers = plan_layers(statements, vocabulary)
    assert len(layers.layers) == 1
    scenarios.completed(app, late=True)
    events = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 1000)
    ]
    with_late = plan_layers([s for e, p in events for s in statements_for(e, p)], vocabulary)
    second = {VOCABULARY[i] for i in with_late.layers[1]}
    assert vocabulary_module._LATE_PROPOSAL in second
    greedy = plan(statements)

    def rows(executions: list[Execution]) -> list[tuple[str, str]]:
        return sorted((x.cypher, repr(sorted(r.items()))) for x in executions for r in x.rows)

    assert rows(_executions(layers)) == rows(greedy)
    assert _count(layers) == sum(len(x.rows) for x in greedy)


def test_the_vocabulary_holds_every_statement_once() -> None:
    """A statement added to ``statements`` but not to ``VOCABULARY`` would fail every Neo4j
    write of its event (``plan_layers`` raises on it): listed here, it fails this test first."""
    texts = {
        v
        for k, v in vars(vocabulary_module).items()
        if k.startswith("_") and isinstance(v, str) and "UNWIND $rows AS r" in v
    }
    assert set(VOCABULARY) == texts
    assert len(VOCABULARY) == len(set(VOCABULARY))
    assert all(v.count("$rows") == 1 for v in VOCABULARY)  # what the layer query renames
    last = [
        i
        for i, v in enumerate(VOCABULARY)
        if v in {vocabulary_module._TOUCH, vocabulary_module._AGENT_MODEL}
    ]
    assert last == [len(VOCABULARY) - 2, len(VOCABULARY) - 1]  # LAST rows: no extra layer
    with pytest.raises(KeyError):
        plan_layers([_rows("UNKNOWN", "1", writes=("k",))], _ORDER)


def test_a_plans_deliberations_merge_its_story_link_once_per_batch() -> None:
    """Each of a plan's deliberations MERGEs the story's link to it: equal rows, one of which
    runs (they took one execution each, and on Neo4j a layer each, before)."""
    link = [vocabulary_module._story_plan("story", "plan") for _ in range(5)]
    other = vocabulary_module._story_plan("story", "plan-2")
    vocabulary = {text: i for i, text in enumerate(VOCABULARY)}
    layers = plan_layers([*link, other], vocabulary)
    assert len(layers.layers) == 1 and _count(layers) == 2
    assert [len(x.rows) for x in plan([*link, other])] == [2]


def test_the_latest_write_by_any_and_by_another_statement_match_a_full_search() -> None:
    """``_Touches`` keeps two numbers instead of every statement's latest write: over random
    writes, it answers as the max over all statements (or all but one) does."""
    import random

    from projectors.graph.batch import _Touches

    rng = random.Random(7)
    for _ in range(300):
        t, written = _Touches(), dict[str, int]()
        for _ in range(rng.randint(1, 12)):
            cypher, slot = rng.choice("abcd"), rng.randint(0, 20)
            t.wrote(cypher, slot)
            written[cypher] = max(written.get(cypher, -1), slot)
            assert t.last_write() == max(written.values())
            for c in "abcde":
                others = [i for k, i in written.items() if k != c]
                assert t.last_write(other_than=c) == max(others, default=-1)
