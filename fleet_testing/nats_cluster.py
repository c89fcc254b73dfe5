"""A real three-node JetStream cluster on loopback, for replicated streams (R3).

Each node is a private nats-server (``fleet.embedded.nats``) with its own client port, route
port and store directory, routed to its peers; any node may be SIGKILLed and started again on
the same ports and directory, the way a pod of a StatefulSet comes back.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import nats
from nats.aio.client import Client as NATS

from fleet.embedded._process import LOOPBACK, ServerProcessError, free_ports
from fleet.embedded.nats import NatsServer

__all__ = ["ClusterNode", "NatsCluster"]


class ClusterNode(NatsServer):
    """One node of a JetStream cluster: a private nats-server routed to its peers on loopback."""

    def __init__(
        self,
        data_dir: Path,
        *,
        name: str,
        cluster_port: int,
        routes: list[str],
        cluster_name: str = "fleet-test",
        port: int | None = None,
    ) -> None:
        super().__init__(data_dir, server_name=name, port=port)
        self.name = name
        self.cluster_port = cluster_port
        self.argv += [
            "--cluster_name", cluster_name,
            "--cluster", f"nats://{self.host}:{cluster_port}",
            "--routes", ",".join(routes),
        ]  # fmt: skip


class NatsCluster:
    """``size`` routed nodes (``n1``, ``n2``, …) under ``root``, each a ``ClusterNode``.

    ``url`` is the first node's (a client learns the others from it and reconnects to them when
    it dies); ``urls`` names them all, for a client that must connect while a node is down.
    """

    def __init__(self, root: Path, size: int = 3, *, cluster_name: str = "fleet-test") -> None:
        ports = free_ports(2 * size)  # distinct: a client and a route port per node
        cluster_ports, client_ports = ports[:size], ports[size:]
        routes = [f"nats://{LOOPBACK}:{p}" for p in cluster_ports]
        self.nodes = [
            ClusterNode(
                root / f"n{i}",
                name=f"n{i}",
                cluster_port=port,
                routes=routes,
                cluster_name=cluster_name,
                port=client,
            )
            for i, (port, client) in enumerate(zip(cluster_ports, client_ports, strict=True), 1)
        ]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def urls(self) -> str:
        """Every node's URL, comma-separated (as ``NATS_URL`` takes them)."""
        return ",".join(n.url for n in self.nodes)

    def start(self, timeout: float = 20.0) -> None:
        """Start every node, then wait until JetStream has a meta leader and all peers."""
        for n in self.nodes:
            n.start(timeout=timeout)
        asyncio.run(self.wait_ready(timeout))

    async def wait_ready(self, timeout: float) -> None:
        """A clustered JetStream answers its API only once a meta leader is elected, and places
        an R3 stream only on peers it has routes to: wait for both, or a stream create fails."""
        deadline = time.monotonic() + timeout
        nc = await nats.connect(self.url)
        try:
            while not await self._ready(nc):
                if time.monotonic() > deadline:
                    msg = f"JetStream cluster not ready after {timeout:.0f} s"
                    raise ServerProcessError(f"{msg}; log:\n{self.nodes[0].log_tail()}")
                await asyncio.sleep(0.1)
        finally:
            await nc.close()

    async def _ready(self, nc: NATS) -> bool:
        if len(nc.discovered_servers) < len(self.nodes) - 1:
            return False  # routes to every peer not up yet
        try:
            reply = await nc.request("$JS.API.INFO", b"", timeout=0.5)
        except nats.errors.Error:
            return False  # no meta leader yet: nobody answers
        return "error" not in json.loads(reply.data)

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()
