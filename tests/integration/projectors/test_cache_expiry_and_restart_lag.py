"""What a node knows of its cache that a lone projection does not: how long finished entries live
(so ``fleet verify`` reports one lost before its time), and how far behind a runner is that has
applied nothing since it started (so ``fleet projections status`` shows seconds, not "?")."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
import valkey

from projectors import CacheProjection, ProjectorRunner
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.control import Projections
from projectors.runner import RunnerState
from tests.integration.projectors.test_api_projections import (  # the light node over real stores
    _fleet,
    _verify_json,
    node,  # noqa: F401 (a fixture)
)
from tests.support.waiting import eventually_sync
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(120)


# The cache's own case: the graph engine plays no part, so the embedded one alone.
@pytest.mark.parametrize("graph", ["ladybug"], indirect=True)
async def test_verify_reports_a_finished_entry_lost_before_it_expired(
    node: dict[str, Any],  # noqa: F811 (the imported fixture)
) -> None:
    app, board, address = node["app"], node["board"], node["address"]
    done = app.repository.get(scenarios.completed(app, late=False).deliberation_id)
    node["projections"].wait(app.recorder.max_notification_id(), timeout=30)
    assert board.expiry_seconds == 3600  # the node's cleanup setting, as the board has it
    board._valkey.delete(board.key(done.id))  # lost (evicted, a flush), long before its hour

    code, found = await asyncio.to_thread(_verify_json, address)
    assert code == 1
    assert len(found) == 1, found
    projection, task_id, detail = found[0]
    assert (projection, task_id) == ("cache", done.task_id)
    assert re.fullmatch(r"no cache entry \(COMPLETED \d+ s ago; finished entries live 3600 s\)",
                        detail), detail  # fmt: skip
    out = await asyncio.to_thread(_fleet, "projections", "rebuild", "cache", "--address", address)
    assert out.returncode == 0, out.stderr
    assert await asyncio.to_thread(_verify_json, address) == (0, [])


def _until_failed(runner: ProjectorRunner, timeout: float = 10.0) -> None:
    eventually_sync(
        lambda: runner.state == RunnerState.FAILED,
        timeout=timeout,
        what=lambda: f"runner still {runner.state}",
    )


def test_status_shows_seconds_behind_for_a_restarted_runner_whose_first_batch_fails(
    board: ValkeyDeliberationBoard, valkey_client: valkey.Valkey
) -> None:
    app = scenarios.popo_app()
    running = app.repository.get(scenarios.in_progress(app).deliberation_id)
    before = ProjectorRunner(app, CacheProjection(board))
    before.start()
    before.wait(app.recorder.max_notification_id() or 0, timeout=30)
    stored = before.position()
    before.close()  # the node stops
    time.sleep(1.5)
    running.fail_agent(agent_id=running.agents[1], round=0, error="HTTP 503")
    app.save(running)  # recorded 1.5 s after the last event the cache holds
    # The runner reads the entry before folding the new event into it: that read fails.
    valkey_client.set(board.key(running.id), "not a hash")

    restarted = ProjectorRunner(app, CacheProjection(board))  # the node starts again
    restarted.start()
    _until_failed(restarted)
    assert restarted.last_event_time is None and restarted.position() == stored
    head, (status,) = Projections(app, [restarted]).status()
    assert (status.position, status.lag_events, status.state) == (stored, head - stored, "failed")
    assert "WRONGTYPE" in status.error
    assert 1.5 <= status.lag_seconds < 30, status
