"""A graph whose write-ahead log was damaged by a crash still opens, and is made whole again.

LadybugDB's alone: a Neo4j server recovers its own transaction log when it starts.

A projector SIGKILLed while LadybugDB appends a commit leaves a torn record at the end of the
log; the engine then refused to open the database ("Checksum verification failed, the WAL file
is corrupted"), so one crash stopped every later ``fleet up``. The crash state is made here
exactly: the database directory is copied while the writer is still open (committed
transactions are in the log, the file itself changes only at a checkpoint), and the copy's log
is then damaged as a crash or a bad disk would.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from projectors import GraphProjection
from projectors.graph.ladybug import LadybugGraph
from projectors.verify import verify
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def _torn_tail(wal: Path) -> None:
    """The last record half-written: the file ends a few bytes early."""
    with wal.open("r+b") as f:
        f.truncate(wal.stat().st_size - 7)


def _flip(at: Callable[[int], int]) -> Callable[[Path], None]:
    def damage(wal: Path) -> None:
        offset = at(wal.stat().st_size)
        with wal.open("r+b") as f:
            f.seek(offset)
            data = f.read(4)
            f.seek(offset)
            f.write(bytes(b ^ 0xFF for b in data))

    return damage


DAMAGE = {
    "torn tail": _torn_tail,
    "last record garbled": _flip(lambda size: size - 150),
    "garbled halfway": _flip(lambda size: size // 2),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_log_opens_with_the_transactions_before_it_and_catches_up(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = scenarios.popo_app()
    for _ in range(3):
        scenarios.completed(app)
        scenarios.timed_out(app)
    items: list[tuple[Any, int]] = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 1000)
    ]
    head = items[-1][1]

    live = LadybugGraph(tmp_path / "live" / "g")
    projection = GraphProjection(live)
    base = 0
    for item in items:  # one commit per event: many records in the log
        projection.apply_batch([item], base=base)
        base = item[1]
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "live", crashed)
    live.close()
    wal = crashed / "g.wal"
    assert wal.stat().st_size > 0, "the copy must hold the log a crash leaves"
    DAMAGE[damage](wal)

    with caplog.at_level(logging.WARNING, logger="projectors.graph.ladybug"):
        graph = LadybugGraph(crashed / "g")  # raised before the fix
    try:
        assert any("write-ahead log is damaged" in r.getMessage() for r in caplog.records)
        recovered = GraphProjection(graph)
        position = recovered.position()
        assert position < head  # the damaged transaction (and any after it) is gone...
        # ...and what is left agrees with its position: no event past it, every one before it.
        rows = graph.query("MATCH (e:Event) RETURN max(e.seq) AS last, count(e) AS n")
        assert rows[0]["last"] == position
        assert rows[0]["n"] == sum(1 for _, p in items if p <= position)
        # The runner's catch-up re-applies the rest, and the graph equals the replay.
        recovered.apply_batch([i for i in items if i[1] > position], base=position)
        assert recovered.position() == head
        report = verify(app, graph=graph)
        assert report.ok, report.differences
    finally:
        graph.close()
