"""A Fleet process started with ``FLEET_STREAM_REPLICAS=3`` creates every stream it needs with
three replicas: the event stream, the dispatchers' work queue, the NATS agent backend's work and
results streams, the dead-letter stream and the ``PLANNING`` stream of plan approvals.

On a real three-node JetStream cluster (``nats_cluster``) of the test's own, so every stream on
it is one Fleet made. First a dispatcher node whose agents are ``fleet worker`` processes
(``FLEET_LOCAL_WORKERS=0``: the streams are the runtime's and the plan consumer's alone), then
workers started as ``fleet worker`` starts them, for another installation on the same cluster.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import nats
import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NotFoundError

from fleet.agents import start_workers
from fleet.bootstrap import FleetNode
from fleet.config import Settings
from fleet_testing.loadgen import LoadGenServer
from fleet_testing.nats_cluster import NatsCluster
from tests.fixtures.nats import unique_stream_name
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(90)


def r3_settings(tmp_path: Path, url: str, llm_url: str, stream: str) -> Settings:
    return Settings.from_env(
        {
            "FLEET_STREAM_REPLICAS": "3",
            "FLEET_DATA_DIR": str(tmp_path),
            "FLEET_NATS_URL": url,
            "FLEET_STREAM": stream,
            "FLEET_VLLM_URL": llm_url,
            "FLEET_COMPONENTS": "dispatcher",
            "FLEET_AGENT_BACKEND": "nats",
            "FLEET_LOCAL_WORKERS": "0",
            "FLEET_CACHE": "off",
        }
    )


#: What a busy cluster answers while it places a stream or a consumer: "not yet", not "wrong".
#: A request to its meta leader can outlast the client's 5 s when the machine is loaded.
NOT_YET = (NotFoundError, NatsTimeout, NoRespondersError)


async def replicas_of_every_stream(url: str) -> dict[str, int]:
    nc = await nats.connect(url)
    try:
        streams = await eventually(
            nc.jetstream().streams_info, timeout=30, what="no stream list", ignoring=NOT_YET
        )
        return {s.config.name or "?": s.config.num_replicas or 1 for s in streams}
    finally:
        await nc.close()


async def plan_consumer_ready(url: str, node: FleetNode, timeout_s: float = 30.0) -> None:
    """Wait until the plan and story consumers read (their streams exist then). By name, not by
    listing every stream: a cluster answers a list asked while a stream is being placed only
    after seconds, and a loaded one may let a request time out (retried, like a missing
    consumer). A part of the node that stopped fails the wait at once, saying why."""
    nc = await nats.connect(url)
    js = nc.jetstream()

    async def ready(stream: str, durable: str) -> object:
        failure = node.failure()
        assert failure is None, failure
        return await js.consumer_info(stream, durable)

    try:
        for stream, durable in (("PLANNING", "fleet-plans"), ("PLANNING_STORIES", "fleet-stories")):
            await eventually(
                functools.partial(ready, stream, durable),
                timeout=timeout_s,
                interval=0.05,
                what=f"no consumer {durable}",
                ignoring=NOT_YET,
            )
    finally:
        await nc.close()


async def test_a_node_and_its_workers_create_every_stream_with_three_replicas(
    tmp_path: Path, nats_cluster: NatsCluster
) -> None:
    url = nats_cluster.url
    node_stream, workers_stream = unique_stream_name("N"), unique_stream_name("W")
    async with LoadGenServer("instant") as lg:
        settings = r3_settings(tmp_path / "node", url, lg.url, node_stream)
        expected = {
            node_stream,
            f"{node_stream}_WORK",
            f"{node_stream}_AGENT_WORK",
            f"{node_stream}_AGENT_RESULTS",
            "FLEET_DEADLETTER",
            "PLANNING",
            "PLANNING_STORIES",
        }
        async with FleetNode(settings) as node:
            await plan_consumer_ready(url, node)  # it sets its streams up in the background
        assert await replicas_of_every_stream(url) == dict.fromkeys(expected, 3)

        settings = r3_settings(tmp_path / "workers", url, lg.url, workers_stream)
        async with contextlib.AsyncExitStack() as stack:
            await start_workers(
                stack, settings, nats_url=url, llm_url=lg.url, model="loadgen", roles=["DEV"]
            )
        expected |= {f"{workers_stream}_AGENT_WORK", f"{workers_stream}_AGENT_RESULTS"}
        assert await replicas_of_every_stream(url) == dict.fromkeys(expected, 3)
