"""The NATS agent backend end to end: a real nats-server, a real dispatcher process
(``fleet up --components dispatcher`` with ``FLEET_AGENT_BACKEND=nats``), real ``fleet worker``
processes, and the load generator as the endpoint (canned text: it claims nothing about quality).

* on ``fleet up``'s in-process workers a deliberation completes with three proposals, and an
  agent whose every call fails is dead-lettered with the reason and recorded as ``AgentFailed``;
* a ``fleet worker`` SIGKILLed mid-call: after the ack wait the call goes to another worker and
  the deliberation completes with each (agent, round) recorded once;
* a ``fleet worker`` paused past the ack wait (SIGSTOP) and resumed: its calls were redelivered
  to a second worker meanwhile, so two workers answer each call; each (agent, round) is still
  recorded once and the deliberation completes;
* ``fleet worker`` with ``FLEET_METRICS_PORT`` serves its role's queue depth on ``/metrics``.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import nats
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_runtime.api import AgentTurn, Sampling
from agent_runtime.nats_backend._wire import QueueNames, WorkMessage
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from natsio import DEAD_LETTER_STREAM
from tests.e2e._processes import FleetProcess, WorkerProcess
from tests.support.deliberations import requested
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(180)

TASK = "Write a Python function that returns the n-th Fibonacci number"


def backend_env(nats_url: str, stream: str, llm_url: str, **extra: str) -> dict[str, str]:
    return {
        "NATS_URL": nats_url,
        "FLEET_STREAM": stream,
        "FLEET_VLLM_URL": llm_url,
        "FLEET_VLLM_MODEL": "loadgen",
        "FLEET_AGENT_BACKEND": "nats",
        "FLEET_WORKER_ACK_WAIT": "2",
        "FLEET_WORKER_MAX_DELIVER": "3",
        "FLEET_WORK_LEASE": "2",
        "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off",
        **extra,
    }


async def request(store: ApplicationDeliberationStore, role: str, rounds: int = 1) -> uuid.UUID:
    task_id = f"nats-{role.lower()}-{uuid.uuid4().hex[:8]}"
    await store.create(requested(task_id, task=TASK, role=role, rounds=rounds, timeout_seconds=120))
    return deliberation_id(task_id)


def answers(events: list[Any]) -> collections.Counter[tuple[str, int]]:
    return collections.Counter(
        (e.agent_id, e.round)
        for e in events
        if isinstance(e, Deliberation.ProposalReceived | Deliberation.AgentFailed)
    )


def turn_calls(lg: LoadGenServer, agent: str) -> int:
    """Proposal calls the endpoint received for ``agent`` (reviews ask with a schema prompt)."""
    return sum(
        1 for body in lg.requests if body.get("user") == agent and "response_format" not in body
    )


async def test_fleet_up_on_nats_workers_completes_and_dead_letters_a_poisoned_agent(
    tmp_path: Path, nats_url: str, nats_env: dict[str, str]
) -> None:
    stream = nats_env["NATS_STREAM"]
    app = await asyncio.to_thread(FleetApplication, nats_env)
    store = ApplicationDeliberationStore(app)
    async with LoadGenServer("instant", modes_by_user={"agent-qa-002": "fail"}) as lg:
        node = FleetProcess(tmp_path / "up", "dispatcher", backend_env(nats_url, stream, lg.url))
        try:
            run = await asyncio.to_thread(node.wait_ready)
            assert "NATS work queue" in json.dumps(run)
            clean, poisoned = await request(store, "DEV"), await request(store, "QA")

            async def terminal() -> bool:
                return all([(await store.get(i)).is_terminal for i in (clean, poisoned)])

            try:
                await eventually(terminal, timeout=90)
            except AssertionError:
                stuck = {i: await store.history(i) for i in (clean, poisoned)}
                story = {i: [type(e).__name__ for e in evs] for i, evs in stuck.items()}
                raise AssertionError(f"not terminal: {story}\n{node.tail()}") from None
        finally:
            node.stop()
    d = await store.get(clean)
    assert d.status.value == "COMPLETED", (d.status, d.reason, node.tail())
    evs = list(await store.history(clean))
    assert sum(isinstance(e, Deliberation.ProposalReceived) for e in evs) == 3
    assert set(answers(evs).values()) == {1}

    q = await store.get(poisoned)
    assert q.status.value == "COMPLETED", (q.status, q.reason, node.tail())
    qevs = list(await store.history(poisoned))
    failed = [e for e in qevs if isinstance(e, Deliberation.AgentFailed)]
    assert [e.agent_id for e in failed] == ["agent-qa-002"]
    assert "500" in failed[0].error and "attempt 3 of 3" in failed[0].error
    assert sum(isinstance(e, Deliberation.ProposalReceived) for e in qevs) == 2

    nc = await nats.connect(nats_url)
    try:
        names = QueueNames(stream)
        parked = await nc.jetstream().get_last_msg(
            DEAD_LETTER_STREAM, names.dead_letter_subject("QA")
        )
    finally:
        await nc.close()
    assert WorkMessage.from_bytes(parked.data or b"").body["agent_id"] == "agent-qa-002"
    assert "500" in (parked.headers or {})["Fleet-Dead-Letter-Reason"]
    app.close()


async def test_a_worker_sigkilled_mid_call_hands_the_call_to_another_worker(
    tmp_path: Path, nats_url: str, nats_env: dict[str, str]
) -> None:
    stream = nats_env["NATS_STREAM"]
    app = await asyncio.to_thread(FleetApplication, nats_env)
    store = ApplicationDeliberationStore(app)
    async with LoadGenServer("instant", modes_by_user={"agent-dev-001": "hang"}) as lg:
        env = backend_env(nats_url, stream, lg.url, FLEET_LOCAL_WORKERS="0")
        node = FleetProcess(tmp_path / "d", "dispatcher", env)
        first = WorkerProcess(tmp_path / "w1.log", env, "--role", "DEV", "--concurrency", "4")
        workers = [first]
        try:
            await asyncio.to_thread(node.wait_ready)
            d_id = await request(store, "DEV")
            # The first worker holds all three turns; agent-dev-001's call hangs at the endpoint.
            await eventually(
                lambda: lg.counters.calls >= 3 and lg.counters.answered >= 2, timeout=60.0
            )
            assert turn_calls(lg, "agent-dev-001") == 1
            lg.modes_by_user.clear()  # the endpoint recovers; the worker holding the call dies
            workers.append(WorkerProcess(tmp_path / "w2.log", env, "--role", "DEV"))
            first.kill()

            async def done() -> bool:
                return (await store.get(d_id)).is_terminal

            await eventually(done, timeout=60)
        finally:
            for w in workers:
                w.stop()
            node.stop()
    d = await store.get(d_id)
    assert d.status.value == "COMPLETED", (d.status, d.reason, node.tail(), workers[1].tail())
    evs = list(await store.history(d_id))
    received = [e for e in evs if isinstance(e, Deliberation.ProposalReceived)]
    assert sorted(e.agent_id for e in received) == [
        "agent-dev-001",
        "agent-dev-002",
        "agent-dev-003",
    ]
    assert set(answers(evs).values()) == {1}, "each (agent, round) recorded once"
    assert turn_calls(lg, "agent-dev-001") == 2, "the killed worker's call was redelivered once"
    app.close()


async def test_two_workers_answering_the_same_redelivered_calls_are_recorded_once(
    tmp_path: Path, nats_url: str, nats_env: dict[str, str]
) -> None:
    """A pause longer than the ack wait (a stalled loop, a frozen VM) is not a death: the paused
    worker still answers when it resumes, after its calls went to another worker."""
    stream = nats_env["NATS_STREAM"]
    app = await asyncio.to_thread(FleetApplication, nats_env)
    store = ApplicationDeliberationStore(app)
    agents = ("agent-dev-001", "agent-dev-002", "agent-dev-003")
    async with LoadGenServer("instant", delay_s=3.0) as lg:  # slow: the answers are still coming
        env = backend_env(nats_url, stream, lg.url, FLEET_LOCAL_WORKERS="0")
        node = FleetProcess(tmp_path / "d", "dispatcher", env)
        first = WorkerProcess(tmp_path / "w1.log", env, "--role", "DEV")
        workers = [first]
        try:
            await asyncio.to_thread(node.wait_ready)
            d_id = await request(store, "DEV")
            await eventually(lambda: all(turn_calls(lg, a) == 1 for a in agents), timeout=60.0)
            os.kill(first.proc.pid, signal.SIGSTOP)  # mid-call: no heart-beats, no answers
            try:
                workers.append(WorkerProcess(tmp_path / "w2.log", env, "--role", "DEV"))
                await eventually(lambda: all(turn_calls(lg, a) == 2 for a in agents), timeout=60.0)
            finally:
                os.kill(first.proc.pid, signal.SIGCONT)  # answers the calls it still holds
            lg.delay_s = 0.0  # the second worker's calls are already under way

            async def done() -> bool:
                return (await store.get(d_id)).is_terminal

            await eventually(done, timeout=60)
            await eventually(
                lambda: lg.counters.in_flight == 0, timeout=60.0
            )  # both workers got every answer
        finally:
            for w in workers:
                w.stop()
            node.stop()
    d = await store.get(d_id)
    assert d.status.value == "COMPLETED", (d.status, d.reason, node.tail())
    assert all(turn_calls(lg, a) == 2 for a in agents), "each call answered by both workers"
    assert lg.counters.failed == 0
    evs = list(await store.history(d_id))
    received = [e for e in evs if isinstance(e, Deliberation.ProposalReceived)]
    assert sorted(e.agent_id for e in received) == list(agents)
    assert set(answers(evs).values()) == {1}, "each (agent, round) recorded once"
    # The second answer to each call was stored by nobody, and its worker said so, naming the
    # deliberation (``fleet worker`` logs the id on every line about a call).
    logs = "".join(w.log_path.read_text(errors="replace") for w in workers)
    dropped = [line for line in logs.splitlines() if "was answered already" in line]
    assert len(dropped) == len(agents), logs
    assert all(f"[{d_id}]" in line for line in dropped), dropped
    app.close()


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""  # not serving yet


async def pending_calls(port: int, role: str) -> dict[str, float]:
    """``fleet_agent_pending_calls`` of ``role`` by state, as Prometheus scrapes it."""
    text = await asyncio.to_thread(scrape, port)  # off the loop: the load generator runs on it
    return {
        sample.labels["state"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "fleet_agent_pending_calls"
        for sample in family.samples
        if sample.labels.get("role") == role
    }


async def idle(port: int) -> bool:
    return await pending_calls(port, "DEV") == {"waiting": 0, "running": 0}


async def busy(port: int) -> bool:
    return await pending_calls(port, "DEV") == {"waiting": 1, "running": 1}


async def test_fleet_worker_serves_its_roles_queue_depth_on_metrics(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    port = free_port()
    runtime = await NatsAgentRuntime.connect(nats_url, QueueNames(nats_stream))
    # Each answer takes longer than the gauges' refresh (5 s), so each state is seen.
    async with LoadGenServer("instant", delay_s=6.0) as lg:
        env = backend_env(nats_url, nats_stream, lg.url, FLEET_METRICS_PORT=str(port))
        worker = WorkerProcess(tmp_path / "w.log", env, "--role", "DEV", "--concurrency", "1")
        try:
            await eventually(lambda: idle(port), timeout=60.0)
            calls = [
                asyncio.create_task(
                    runtime.run_turn(
                        AgentTurn(
                            deliberation_id="d-metrics",
                            agent_id=f"dev-agent-{i}",
                            role="DEV",
                            round=0,
                            task=TASK,
                            sampling=Sampling(model="loadgen"),
                            timeout_s=30.0,
                        )
                    )
                )
                for i in (1, 2)
            ]
            # One call at a time: one runs while the other waits for the worker.
            await eventually(lambda: busy(port), timeout=60.0)
            await asyncio.gather(*calls)
            await eventually(lambda: idle(port), timeout=60.0)
        finally:
            worker.stop()
            await runtime.close()
    said = " ".join(worker.log_path.read_text().split())  # the console wraps long lines
    assert f"metrics http://127.0.0.1:{port}/metrics" in said
