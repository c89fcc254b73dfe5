"""Every stream the NATS agent backend and the dispatchers' work sharing create follows the
replica setting (``FLEET_STREAM_REPLICAS``), as the event stream does: the agent work and results
streams, the dead-letter stream and the dispatcher work queue.

On a real three-node JetStream cluster (``nats_cluster``): an installation started at R1 and
restarted with R3 has every stream raised to R3, and still serves calls; a process started
without the setting (R1) never lowers them. On one server: R3 is refused with an error that
names the stream and the setting, and a count JetStream cannot take is refused before NATS.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NATS

from agent_runtime.member.caller import CouncilMember
from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from agent_runtime.nats_backend.worker import AgentWorker
from dispatchers.jetstream.work_queue import JetStreamWorkQueue
from fleet_testing.loadgen import LoadGenServer
from natsio import DEAD_LETTER_STREAM, StreamSetupError
from tests.fixtures.nats import NatsCluster, unique_stream_name
from tests.integration.agent_runtime.conftest import endpoint
from tests.integration.agent_runtime.test_nats_runtime import turn

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def installation(
    nc: NATS, names: QueueNames, llm_url: str, replicas: int
) -> AsyncIterator[NatsAgentRuntime]:
    """What a dispatcher and a DEV worker set up at start-up, with ``replicas``."""
    work_queue = JetStreamWorkQueue(nc, stream=f"{names.namespace}_WORK", replicas=replicas)
    await work_queue.ensure()
    runtime = NatsAgentRuntime(nc, names, grace_s=2.0)
    await runtime.start(replicas=replicas)
    worker = AgentWorker(
        nc, names, "DEV", CouncilMember("DEV", endpoint(llm_url)), ack_wait_s=2.0, replicas=replicas
    )
    try:
        async with worker:
            yield runtime
    finally:
        await runtime.close()


async def replicas_of(nc: NATS, names: QueueNames) -> dict[str, int]:
    js = nc.jetstream()
    streams = (names.work_stream, names.results_stream, DEAD_LETTER_STREAM)
    found = {s: (await js.stream_info(s)).config.num_replicas or 1 for s in streams}
    work = (await js.stream_info(f"{names.namespace}_WORK")).config.num_replicas or 1
    return {**found, "dispatcher work queue": work}


async def test_every_stream_follows_the_setting_raised_never_lowered(
    nats_cluster: NatsCluster,
) -> None:
    names = QueueNames(unique_stream_name("R"))
    nc = await nats.connect(nats_cluster.url)
    try:
        async with LoadGenServer("instant") as lg:
            async with installation(nc, names, lg.url, replicas=1):  # an older R1 start
                pass
            assert set((await replicas_of(nc, names)).values()) == {1}

            async with installation(nc, names, lg.url, replicas=3) as runtime:
                assert set((await replicas_of(nc, names)).values()) == {3}
                answer = await runtime.run_turn(turn("dev-agent-1"))  # the raised streams serve
                assert answer.agent_id == "dev-agent-1" and answer.content

            async with installation(nc, names, lg.url, replicas=1):  # no setting: never lower
                assert set((await replicas_of(nc, names)).values()) == {3}
    finally:
        await nc.close()


async def test_more_replicas_than_servers_is_refused_naming_the_stream(nc: NATS) -> None:
    names = QueueNames(unique_stream_name("R"))
    runtime = NatsAgentRuntime(nc, names)
    with pytest.raises(StreamSetupError, match=f"{names.work_stream} with 3 replica.*REPLICAS"):
        await runtime.start(replicas=3)
    await runtime.close()
    with pytest.raises(ValueError, match=r"1 to 5 .*FLEET_STREAM_REPLICAS.*not 7"):
        await NatsAgentRuntime(nc, names).start(replicas=7)
