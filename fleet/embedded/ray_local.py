"""Connect to Ray: a cluster at RAY_ADDRESS, or a private local instance on loopback only.

A local instance keeps every socket on 127.0.0.1. ``ray.init`` deliberately turns 127.0.0.1 into
the machine's routable address ("so other nodes can reach it"); Ray's own switch for single-host
instances (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read by ``get_node_ip_address``) keeps the
GCS, raylet and workers on loopback instead. The instance gets its own short temp folder (Unix
socket paths are limited to about 100 bytes) and no dashboard.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, NotRequired, TypedDict

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
    """The GCS address (or "already initialised")."""
    started: bool
    """Whether this call started Ray (then it shuts it down: ``disconnect_ray``)."""
    temp_dir: NotRequired[str]
    """A private local instance's temp folder."""


def connect_ray(
    address: str | None,
    *,
    num_cpus: int | None = None,
    object_store_bytes: int = 256 * 1024 * 1024,
    runtime_env: dict[str, Any] | None = None,
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
    if address:
        ctx = ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
    else:
        # Also for a process that imported ray before the variable was set.
        ray_constants.ENABLE_RAY_CLUSTER = False
        temp_dir = Path(tempfile.mkdtemp(prefix="fray-", dir="/tmp"))
        ctx = ray.init(
            include_dashboard=False,
            num_cpus=num_cpus or max(2, os.cpu_count() or 2),
            object_store_memory=object_store_bytes,
            _temp_dir=str(temp_dir),
            log_to_driver=False,
            configure_logging=False,
            runtime_env=runtime_env,
        )
        return {
            "address": _gcs_address(ctx),
            "started": True,
            "temp_dir": str(temp_dir),
        }
    return {"address": _gcs_address(ctx), "started": True}


def disconnect_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


def _gcs_address(ctx: Any) -> str:
    """The GCS address ``ray.init`` reports (its ``RayContext`` is typed as a base class)."""
    return str(ctx.address_info.get("gcs_address", ""))
