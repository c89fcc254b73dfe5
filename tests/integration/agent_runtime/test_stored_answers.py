"""Answers are found where they are stored, whoever asks and whatever the server forgot.

A call's answer lives in the results stream. A dispatcher that takes a deliberation over asks
again for the calls its predecessor never read; those answers must be taken from the stream,
not asked of the model again and not waited for in vain. Two things made that fail before:

* a work-queue stream forgets the ids of acked work when nats-server restarts, so the repeated
  call ran again, the results stream refused its second answer as a repeat, and the new caller,
  whose results consumer only sees answers stored after it started, waited out its timeout and
  recorded a false AgentFailed;
* a failure stored for an earlier caller (its call expired in the queue) would be handed to the
  new caller, whose own deadline had not passed;
* a caller whose results feed was still reconnecting after a lost server reached its deadline
  and recorded "no worker answered" for a call whose answer the stream held (seen in the soak,
  on a three-node cluster losing a node twice in 15 s).

Real nats-server (a private one that the test restarts), real workers, and the load generator as
the endpoint (canned text: it claims nothing about quality).
"""

from __future__ import annotations

import asyncio

import nats
import pytest
from nats.aio.client import Client as NATS

from agent_runtime.api import AgentTurnError
from agent_runtime.member.caller import CouncilMember
from agent_runtime.nats_backend._wire import QueueNames, ResultMessage
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from agent_runtime.nats_backend.worker import AgentWorker
from fleet.embedded.nats import NatsServer
from fleet_testing.loadgen import LoadGenServer
from tests.integration.agent_runtime.conftest import WorkerFactory, endpoint
from tests.integration.agent_runtime.test_nats_runtime import turn
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(90)


async def test_an_answer_stored_for_a_dead_caller_is_taken_after_a_server_restart(
    private_nats_server: NatsServer, names: QueueNames
) -> None:
    async with LoadGenServer("instant", delay_s=0.5) as lg:
        worker_nc = await nats.connect(private_nats_server.url, max_reconnect_attempts=-1)
        worker = AgentWorker(
            worker_nc, names, "DEV", CouncilMember("DEV", endpoint(lg.url)), ack_wait_s=2.0
        )
        first = await NatsAgentRuntime.connect(private_nats_server.url, names, grace_s=1.0)
        t = turn("dev-agent-1", d_id="taken-over", timeout_s=8.0)
        async with worker:
            call = asyncio.create_task(first.run_turn(t))
            await eventually(lambda: lg.counters.calls == 1)
            await first.close()  # the first dispatcher dies with the call in flight
            with pytest.raises(AgentTurnError):
                await call
            await eventually(lambda: worker.stats.answered == 1)  # ...and the worker stores it

            private_nats_server.kill()  # the work stream forgets the acked call's id
            private_nats_server.start()

            second = await NatsAgentRuntime.connect(private_nats_server.url, names, grace_s=1.0)
            try:
                got = await asyncio.wait_for(second.run_turn(t), 5.0)  # not the 8 s timeout
            finally:
                await second.close()
        await worker_nc.close()
    assert got.agent_id == "dev-agent-1" and "```python" in got.content
    assert lg.counters.calls == 1, "the stored answer was asked of the model again"
    assert second.reused == 1 and second.published == 0


async def test_an_earlier_callers_stored_failure_is_retried_as_a_new_attempt(
    nc: NATS, names: QueueNames, runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    t = turn("dev-agent-2", d_id="expired-before", timeout_s=8.0)
    js = nc.jetstream()
    stale = ResultMessage("turn", t.key, ok=False, error="deadline passed before a worker ran it")
    await js.publish(
        names.result_subject("turn", t.key), stale.to_bytes(), headers={"Nats-Msg-Id": stale.msg_id}
    )
    async with LoadGenServer("instant", delay_s=0.5) as lg:
        await start_worker(lg.url)
        call = asyncio.create_task(runtime.run_turn(t))
        await eventually(lambda: lg.counters.calls == 1)
        # A late failure of the earlier attempt lands while the new one runs: not this call's.
        late = ResultMessage("turn", t.key, ok=False, error="late failure of the first attempt")
        await js.publish(
            names.result_subject("turn", t.key), late.to_bytes(), headers={"Nats-Msg-Id": "late"}
        )
        got = await call
    assert got.agent_id == "dev-agent-2" and got.content
    assert lg.counters.calls == 1 and runtime.published == 1


async def test_a_failure_of_the_calls_own_attempt_still_fails_it(
    runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("fail") as lg:
        await start_worker(lg.url, max_deliver=1)
        with pytest.raises(AgentTurnError, match="attempt 1 of 1"):
            await runtime.run_turn(turn("dev-agent-3", d_id="really-failed", timeout_s=8.0))


async def test_work_the_stream_cannot_take_yet_is_queued_once_it_can(
    nc: NATS,
    names: QueueNames,
    runtime: NatsAgentRuntime,
    start_worker: WorkerFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A publish refused while the work stream has no leader (an election on an R3 stream, here
    the stream gone for a moment) is retried, not recorded as a failed call."""
    js = nc.jetstream()
    await js.delete_stream(names.work_stream)
    caplog.set_level("INFO", logger="agent_runtime.nats_backend.runtime")
    async with LoadGenServer("instant") as lg:
        call = asyncio.create_task(runtime.run_turn(turn("dev-agent-1", d_id="no-leader")))
        await eventually(lambda: "queuing retried" in caplog.text, what="a refused publish")
        assert not call.done()
        await js.add_stream(names.work_stream_config(120.0))
        await start_worker(lg.url)
        got = await asyncio.wait_for(call, 10.0)
    assert got.agent_id == "dev-agent-1" and lg.counters.calls == 1


async def test_an_answer_the_feed_has_not_brought_by_the_deadline_is_taken_from_the_stream(
    runtime: NatsAgentRuntime,
    start_worker: WorkerFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The feed is cut (as while its consumer reconnects); the worker answers and the answer is
    stored: at the deadline the call takes it from the stream instead of failing."""
    fed: list[object] = []
    monkeypatch.setattr(runtime, "_deliver", fed.append)
    async with LoadGenServer("instant") as lg:
        worker = await start_worker(lg.url)
        t = turn("dev-agent-4", d_id="feed-behind", timeout_s=1.0)
        got = await asyncio.wait_for(runtime.run_turn(t), 10.0)
    assert got.agent_id == "dev-agent-4" and "```python" in got.content
    assert worker.stats.answered == 1 and lg.counters.calls == 1
    assert fed, "the answer never reached the (cut) feed: the test did not test the deadline"
    assert runtime.found_at_deadline == 1
    assert "found stored at its deadline" in caplog.text


async def test_a_call_nobody_answered_still_fails_at_its_deadline(
    runtime: NatsAgentRuntime,
) -> None:
    with pytest.raises(AgentTurnError, match=r"no worker answered within 0\.5 s"):
        await runtime.run_turn(turn("dev-agent-5", d_id="nobody", timeout_s=0.5))
    assert runtime.found_at_deadline == 0
