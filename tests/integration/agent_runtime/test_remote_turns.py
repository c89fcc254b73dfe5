"""Agent turns asked of another process over NATS (``agent_runtime.nats_backend.turns``), on a
real nats-server: the answer comes back whole, the serving runtime's failure comes back as an
``AgentTurnError`` with its reason, a turn nobody answers in time fails with a bound, a
malformed request is answered, not dropped, and where the agents' checks run comes back as
found (unknown when nobody serves). (Asking with no process serving, and the whole
DeriveSubtasks path: ``tests/integration/fleet/test_planning_rpcs.py``.)

The serving runtime here is a test double: these tests are about the wire, not about models.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import nats
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from agent_runtime.api import AgentTurn, AgentTurnError, Sampling, TurnResult
from agent_runtime.checks.sandbox import SandboxState
from agent_runtime.nats_backend.turns import RemoteTurns, TurnService, turn_subject

pytestmark = pytest.mark.timeout(30)


class Scripted:
    """Answers by the turn's task: ``fail`` raises as an unreachable model would, ``hang``
    never answers; anything else is echoed."""

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        if turn.task == "fail":
            raise AgentTurnError(f"{turn.agent_id}: the model endpoint refused the connection")
        if turn.task == "hang":
            await asyncio.Event().wait()
        return TurnResult(turn.agent_id, turn.round, f"echo: {turn.task}", "m", 3, 4, 5)


def turn(task: str, timeout_s: float = 5.0) -> AgentTurn:
    return AgentTurn(
        deliberation_id="d-1",
        agent_id="dev-agent-1",
        role="DEV",
        round=0,
        task=task,
        sampling=Sampling(model="m", temperature=0.2),
        timeout_s=timeout_s,
    )


@pytest_asyncio.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    conn = await nats.connect(nats_url)
    yield conn
    await conn.drain()


async def test_turns_cross_processes_with_their_answers_and_failures(
    nc: NATS, nats_stream: str
) -> None:
    service = TurnService(nc, nats_stream, Scripted())
    await service.start()
    try:
        turns = RemoteTurns(nc, nats_stream)
        answers = await asyncio.gather(*(turns.run_turn(turn(f"t{i}")) for i in range(5)))
        assert [a.content for a in answers] == [f"echo: t{i}" for i in range(5)]
        assert answers[0] == TurnResult("dev-agent-1", 0, "echo: t0", "m", 3, 4, 5)

        with pytest.raises(AgentTurnError, match="refused the connection"):
            await turns.run_turn(turn("fail"))

        with pytest.raises(AgentTurnError, match=r"no agent turn answer within 5\.1 s"):
            await turns.run_turn(turn("hang", timeout_s=0.1))

        for junk in (b"not json", b"[1]", b'{"agent_id": "a"}'):  # the last lacks fields
            reply = await nc.request(turn_subject(nats_stream), junk, timeout=5)
            assert "malformed agent turn" in json.loads(reply.data)["error"], junk
    finally:
        await service.close()


async def test_where_the_agents_checks_run_crosses_too(nc: NATS, nats_stream: str) -> None:
    turns = RemoteTurns(nc, nats_stream)
    assert await turns.sandbox() is None  # nobody serves: not known, not "fine"
    refused = SandboxState("auto", False, "bwrap: No space left on device creating a namespace")
    service = TurnService(nc, nats_stream, Scripted(), sandbox=lambda: refused)
    await service.start()
    try:
        assert await turns.sandbox() == refused
    finally:
        await service.close()
