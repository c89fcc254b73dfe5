"""A dispatcher takes a deliberation over: every answer its predecessor's calls produced is found,
and AgentFailed is recorded only where no answer exists.

The reproduction of a fault-injection finding, as real processes: one dispatcher (``fleet up
--components dispatcher``), the agents on a separate ``fleet worker`` (NATS backend) or on Ray,
a nats-server of the test's own, and the load generator as the endpoint (canned text: it claims
nothing about quality).

* ``restart``: the dispatcher is SIGKILLed mid round 0, the worker stores the answers, then
  nats-server restarts (so the work stream forgets the acked calls' ids) and a second
  dispatcher takes over. Before, the calls ran again, the results stream refused the second
  answers as repeats, and the second dispatcher waited out the call timeout and recorded
  AgentFailed for answers that were stored: FAILED after ~28 s.
* ``expired`` (NATS backend): the dispatcher is SIGKILLed while its calls wait in the queue; a
  worker comes up only after the calls' own lifetime has passed and answers each "expired";
  the second dispatcher must not take those failures, which belonged to a caller that is gone,
  as its own.
"""

from __future__ import annotations

import asyncio
import collections
import time
import uuid
from pathlib import Path

import nats
import pytest
from nats.js.errors import NotFoundError

from agent_runtime.nats_backend._wire import QueueNames, WorkMessage
from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet.embedded.nats import NatsServer
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import FleetProcess, WorkerProcess, dispatcher_env
from tests.e2e.test_nats_backend import turn_calls
from tests.fixtures.nats import unique_stream_name
from tests.support.deliberations import FIB_TASK, requested
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)

CALL_TIMEOUT_S = 20.0


async def stored_results(nats_url: str, stream: str) -> int:
    nc = await nats.connect(nats_url)
    try:
        info = await nc.jetstream().stream_info(QueueNames(stream).results_stream)
        return int(info.state.messages)
    finally:
        await nc.close()


@pytest.mark.parametrize(
    ("backend", "fault"), [("nats", "restart"), ("ray", "restart"), ("nats", "expired")]
)
async def test_a_takeover_finds_every_stored_answer_and_records_no_false_failure(
    tmp_path: Path,
    private_nats_server: NatsServer,
    backend: str,
    backend_env: dict[str, str],
    fault: str,
) -> None:
    server = private_nats_server
    stream = unique_stream_name("TK")
    app_env = {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": server.url,
        "NATS_STREAM": stream,
    }
    app = await asyncio.to_thread(FleetApplication, app_env)
    store = ApplicationDeliberationStore(app)
    procs: list[FleetProcess] = []
    workers: list[WorkerProcess] = []
    async with LoadGenServer("instant", delay_s=1.5) as lg:
        env = dispatcher_env(
            server.url,
            stream,
            lg.url,
            backend_env,
            FLEET_AGENT_CALL_TIMEOUT=str(CALL_TIMEOUT_S),
            FLEET_LOCAL_WORKERS="0",  # the agents are the separate `fleet worker` below
        )
        if fault == "expired":
            env["FLEET_AGENT_CALL_TIMEOUT"] = "3"
        try:
            if backend == "nats" and fault == "restart":
                workers.append(WorkerProcess(tmp_path / "w1.log", env, "--role", "DEV"))
            procs.append(FleetProcess(tmp_path / "d1", "dispatcher", env))
            await asyncio.to_thread(procs[0].wait_ready)
            task_id = f"takeover-{uuid.uuid4().hex[:8]}"
            d_id = deliberation_id(task_id)
            await store.create(requested(task_id, task=FIB_TASK, timeout_seconds=120))
            if fault == "restart":
                await eventually(lambda: lg.counters.calls >= 3, timeout=90)  # round 0 in flight
                procs[0].kill()
                if backend == "nats":  # the worker stores the answers nobody reads now
                    await eventually(
                        lambda: _at_least(stored_results(server.url, stream), 3), timeout=30
                    )
                server.kill()
                server.start()
            else:  # the calls wait in the queue (no worker yet) past their own lifetime
                await eventually(lambda: _queued(server.url, stream, 3), timeout=90)
                procs[0].kill()
                deadline = await _last_deadline(server.url, stream)
                await eventually(lambda: time.time() > deadline, timeout=10)  # the calls' lifetime
                workers.append(WorkerProcess(tmp_path / "w1.log", env, "--role", "DEV"))
                await eventually(
                    lambda: _at_least(stored_results(server.url, stream), 3), timeout=60
                )
                assert lg.counters.calls == 0  # each was answered "expired", never run

            procs.append(FleetProcess(tmp_path / "d2", "dispatcher", env))
            await asyncio.to_thread(procs[-1].wait_ready)
            taken_over = time.monotonic()  # Ray's start (seconds on a busy machine) not counted

            async def terminal() -> bool:
                return (await store.get(d_id)).is_terminal

            await eventually(terminal, timeout=90)
            took = time.monotonic() - taken_over
            d = await store.get(d_id)
            events = list(await store.history(d_id))
        finally:
            logs = "".join(p.tail() for p in procs) + "".join(w.tail() for w in workers)
            for p in procs:
                p.stop()
            for w in workers:
                w.stop()
        failed = [e for e in events if isinstance(e, Deliberation.AgentFailed)]
        assert not failed, (failed, logs)
        assert d.status.value == "COMPLETED", (d.status, d.reason, logs)
        proposals = collections.Counter(
            e.agent_id for e in events if isinstance(e, Deliberation.ProposalReceived)
        )
        assert proposals == {f"agent-dev-{i:03d}": 1 for i in (1, 2, 3)}
        assert took < CALL_TIMEOUT_S, f"took {took:.1f} s: an answer was waited for in vain"
        if backend == "nats" and fault == "restart":  # stored answers are taken, not re-asked
            assert all(turn_calls(lg, f"agent-dev-{i:03d}") == 1 for i in (1, 2, 3)), logs
    app.close()


async def _at_least(count: object, n: int) -> bool:
    return int(await count) >= n  # type: ignore[misc]


async def _last_deadline(nats_url: str, stream: str) -> float:
    """The latest deadline the queued calls carry (Unix time)."""
    names = QueueNames(stream)
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(names.work_stream)
        seqs = range(info.state.first_seq, info.state.last_seq + 1)
        return max(
            [
                WorkMessage.from_bytes(
                    (await js.get_msg(names.work_stream, s)).data or b""
                ).deadline
                for s in seqs
            ]
        )
    finally:
        await nc.close()


async def _queued(nats_url: str, stream: str, n: int) -> bool:
    nc = await nats.connect(nats_url)
    try:
        info = await nc.jetstream().stream_info(QueueNames(stream).work_stream)
        return int(info.state.messages) >= n
    except NotFoundError:  # the stream is created by the dispatcher once it is up
        return False
    finally:
        await nc.close()
