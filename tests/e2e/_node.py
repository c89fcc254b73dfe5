"""Settings of an in-process Fleet node whose model is the load generator.

On the test session's nats-server, with a stream of its own (so runs share nothing but the
server), agents in process (no Ray start-up), no cache (reads replay), and the dispatcher as
``fleet up`` runs it: with the work queue and the plan consumer.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from fleet.config import Settings
from fleet.embedded._process import free_port


def loadgen_node_settings(
    data_dir: Path, nats_url: str, llm_url: str, **overrides: Any
) -> Settings:
    """A whole node (API, dispatcher, agents, graph) calling ``llm_url``; ``overrides`` on top."""
    base: dict[str, Any] = {
        "data_dir": data_dir,
        "nats_url": nats_url,
        "stream": f"T_{uuid.uuid4().hex[:16].upper()}",
        "grpc_port": free_port(),
        "cache_enabled": False,
        "vllm_url": llm_url,
        "vllm_model": "loadgen",
        "agent_runtime": "local",
    }
    return Settings(**{**base, **overrides})
