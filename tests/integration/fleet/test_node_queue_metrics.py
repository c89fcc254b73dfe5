"""A node with ``FLEET_METRICS_PORT`` serves the work-waiting gauges on ``/metrics``: the
dispatchers' notices (``fleet_dispatcher_pending_notices``) when dispatchers share work, and the
agent calls per role (``fleet_agent_pending_calls``) when NATS workers serve them, so a scrape of
the dispatcher finds the autoscaling signal without a ``fleet worker`` of its own.

A dispatcher node on the session's nats-server with the load generator as its model; the values
themselves are tested in ``test_queue_metrics``.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest

from aggregates import Role
from fleet.bootstrap import FleetNode
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from tests.fixtures.nats import unique_stream_name

pytestmark = pytest.mark.timeout(60)

NOTICES = "fleet_dispatcher_pending_notices"
CALLS = "fleet_agent_pending_calls"


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return str(r.read().decode())


@pytest.mark.parametrize(
    ("backend", "work_sharing"),
    [("nats", "on"), ("ray", "on"), ("nats", "off")],
    ids=["nats-workers", "in-process-agents", "no-work-sharing"],
)
async def test_a_node_serves_the_work_waiting_gauges(
    tmp_path: Path, nats_url: str, backend: str, work_sharing: str
) -> None:
    async with LoadGenServer("instant") as lg:
        settings = Settings.from_env(
            {
                "FLEET_METRICS_PORT": str(free_port()),
                "FLEET_DATA_DIR": str(tmp_path),
                "FLEET_NATS_URL": nats_url,
                "FLEET_STREAM": unique_stream_name("QM"),
                "FLEET_VLLM_URL": lg.url,
                "FLEET_COMPONENTS": "dispatcher",
                "FLEET_AGENT_BACKEND": backend,
                "FLEET_AGENT_RUNTIME": "local",
                "FLEET_WORK_SHARING": work_sharing,
                "FLEET_PLAN_CONSUMER": "off",
                "FLEET_CACHE": "off",
            }
        )
        async with FleetNode(settings) as node:
            text = await asyncio.to_thread(scrape, node.endpoints.metrics)

    notices = {f'{NOTICES}{{state="{s}"}} 0.0' for s in ("waiting", "claimed")}
    calls = {
        f'{CALLS}{{role="{r.value}",state="{s}"}} 0.0' for r in Role for s in ("waiting", "running")
    }
    samples = {line for line in text.splitlines() if not line.startswith("#")}
    assert notices <= samples if work_sharing == "on" else not any(NOTICES in s for s in samples)
    assert calls <= samples if backend == "nats" else not any(CALLS in s for s in samples)
