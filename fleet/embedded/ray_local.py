"""Connect to Ray: a cluster at RAY_ADDRESS, or a private local instance on loopback only.

A cluster is reached either as a Ray client (``ray://head:10001``, what the Kubernetes manifests
use: KubeRay's head service, one gRPC port, the driver outside the cluster) or by its GCS address
(``head:6379``, a driver that runs as a node of the cluster's network). Both give the same API to
``agent_runtime.ray_backend.runtime``; only what ``ray.init`` returns differs (a ``ClientContext``
has no ``address_info``), so the address reported is the one connected to, with how.

A local instance keeps every socket on 127.0.0.1. ``ray.init`` deliberately turns 127.0.0.1 into
the machine's routable address ("so other nodes can reach it"); Ray's own switch for single-host
instances (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read by ``get_node_ip_address``) keeps the
GCS, raylet and workers on loopback instead. The instance gets its own short temp folder (Unix
socket paths are limited to about 100 bytes) and no dashboard.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from agent_runtime.cpus import usable_cpus

log = logging.getLogger(__name__)

CLIENT_CONNECT_ATTEMPTS = 3
"""Tries at a Ray client connection (``_connect_client``)."""
CLIENT_RETRY_S = 2.0
"""Pause before the second try; the third waits twice as long."""

LOCAL_ONLY_ENV = {
    # Single-host mode: every Ray address is loopback (see the module docstring).
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # Ray 2.60 turns token auth on for clusters started with `ray start`; a private local
    # instance needs none. A remote cluster's token comes from the environment.
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}


class RayConnection(TypedDict):
    """What ``connect_ray`` did."""

    address: str
    """Where this process's Ray is: a local instance's or a cluster's GCS address, a Ray client's
    ``ray://`` address (with the cluster's Ray version), or "already initialised"."""
    started: bool
    """Whether this call started Ray or connected to it (then it ends that: ``disconnect_ray``
    shuts a local instance down, or disconnects from a cluster, which goes on running)."""
    client: NotRequired[bool]
    """Connected as a Ray client (``ray://``): the driver's objects live on the cluster's client
    server, and the code the actors run is imported there and on the workers."""
    temp_dir: NotRequired[str]
    """A private local instance's temp folder."""


def connect_ray(
    address: str | None,
    *,
    num_cpus: int | None = None,
    object_store_bytes: int = 256 * 1024 * 1024,
    runtime_env: dict[str, Any] | None = None,  # Any: ray.init's own runtime_env type
) -> RayConnection:
    """``ray.init`` unless this process already did; ``started`` says whether this call did.

    Whoever started Ray shuts it down: a test session shares one instance across many nodes.
    """
    if not address:
        for k, v in LOCAL_ONLY_ENV.items():
            os.environ.setdefault(k, v)
    import ray
    from ray._private import ray_constants

    if ray.is_initialized():
        return {"address": "already initialised", "started": False}
    if address and is_client_address(address):
        ctx = _connect_client(address, runtime_env)
        version = getattr(ctx, "ray_version", "") or "unknown"
        where = f"{address} (Ray client, cluster Ray {version})"
        return {"address": where, "started": True, "client": True}
    if address:
        ctx = ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        return {"address": _gcs_address(ctx), "started": True}
    # Also for a process that imported ray before the variable was set.
    ray_constants.ENABLE_RAY_CLUSTER = False
    temp_dir = Path(tempfile.mkdtemp(prefix="fray-", dir="/tmp"))
    ctx = ray.init(
        include_dashboard=False,
        num_cpus=num_cpus or max(2, usable_cpus()),
        object_store_memory=object_store_bytes,
        _temp_dir=str(temp_dir),
        log_to_driver=False,
        configure_logging=False,
        runtime_env=runtime_env,
    )
    return {"address": _gcs_address(ctx), "started": True, "temp_dir": str(temp_dir)}


# Any: ray.init's runtime_env type, and its result read as a client context (see _gcs_address)
def _connect_client(address: str, runtime_env: dict[str, Any] | None) -> Any:
    """``ray.init`` as a Ray client, again after a failed start of the connection's server.

    The head's client server starts one server process per connection; on a loaded head that
    start can fail outright (``ConnectionAbortedError``: "Starting Ray client server failed",
    seen on a busy two-core machine) while the next one succeeds. An unreachable head is not
    tried again here: Ray has already retried it for about 30 s.
    """
    import ray

    for attempt in range(1, CLIENT_CONNECT_ATTEMPTS + 1):
        try:
            return ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        except ConnectionAbortedError as e:
            if attempt == CLIENT_CONNECT_ATTEMPTS:
                msg = f"could not connect to Ray at {address} ({attempt} attempts): {e}"
                raise ConnectionError(msg) from e
            log.warning("Ray client connection to %s failed (%s); trying again", address, e)
            time.sleep(CLIENT_RETRY_S * attempt)
    raise AssertionError("unreachable")


def is_client_address(address: str | None) -> bool:
    """Whether ``address`` names a Ray client server (``ray://host:port``), not a GCS."""
    return bool(address) and str(address).strip().lower().startswith("ray://")


def disconnect_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


def _gcs_address(ctx: Any) -> str:
    """The GCS address a driver's ``ray.init`` reports (typed as a base class, which a Ray
    client's ``ClientContext`` also is: that one has no ``address_info``)."""
    return str(ctx.address_info.get("gcs_address", ""))
