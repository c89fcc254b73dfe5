"""Every line a worker logs about a call names the call's deliberation, as ``fleet worker``
prints it (``fleet.logs``' filter): the worker's own retries and dead letters, the model client's
lines inside the call, and the dead letter written from the max-deliveries advisory, which runs
outside the call's task."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import pytest

from agent_runtime.api import AgentTurnError
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from fleet.logs import DeliberationFilter
from fleet_testing.loadgen import LoadGenServer, Mode
from tests.integration.agent_runtime.conftest import WorkerFactory
from tests.integration.agent_runtime.test_nats_runtime import _StalledWorker, turn

pytestmark = pytest.mark.timeout(60)

WATCHED = ("agent_runtime.nats_backend.worker", "agent_runtime.member.openai_client")


class _Records(logging.Handler):
    """Keeps each record after ``fleet.logs``' filter stamped it, as ``fleet worker``'s handler."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(DeliberationFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def worker_lines() -> Iterator[list[logging.LogRecord]]:
    handler = _Records()
    loggers = [logging.getLogger(name) for name in WATCHED]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler.records
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def about_calls(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if "serving" not in r.getMessage()]  # the start-up line


def deliberation(record: logging.LogRecord) -> str:
    """The id the line is printed with ("-" when none)."""
    return str(getattr(record, "deliberation_id", ""))


async def test_lines_inside_a_call_and_its_dead_letter_carry_the_deliberation(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    modes: dict[str, Mode] = {"dev-agent-2": "fail", "dev-agent-3": "overthink"}
    async with LoadGenServer("instant", modes_by_user=modes) as lg:
        with worker_lines() as records:
            await start_worker(lg.url, max_deliver=2)
            with pytest.raises(AgentTurnError):
                await runtime.run_turn(turn("dev-agent-2", d_id="d-failing"))
            await runtime.run_turn(turn("dev-agent-3", d_id="d-thinking"))
            await runtime.run_turn(turn("dev-agent-1", d_id="d-quiet"))
    lines = about_calls(records)
    failing = [r.getMessage() for r in lines if deliberation(r) == "d-failing"]
    assert any("attempt 1/2 failed" in m for m in failing), failing
    assert any("dead-lettered" in m for m in failing), failing
    thinking = [r for r in lines if r.name == "agent_runtime.member.openai_client"]
    assert thinking and set(map(deliberation, thinking)) == {"d-thinking"}
    assert set(map(deliberation, lines)) == {"d-failing", "d-thinking"}


async def test_a_dead_letter_from_the_advisory_carries_the_deliberation(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant", modes_by_user={"dev-agent-1": "hang"}) as lg:
        with worker_lines() as records:
            await start_worker(lg.url, cls=_StalledWorker, ack_wait_s=0.5, max_deliver=2)
            with pytest.raises(AgentTurnError, match="delivered 2 times"):
                await runtime.run_turn(turn(d_id="d-stalled", timeout_s=20.0))
    parked = [r for r in about_calls(records) if "dead-lettered" in r.getMessage()]
    assert parked and set(map(deliberation, parked)) == {"d-stalled"}
