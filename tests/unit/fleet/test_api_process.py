"""The environment of a node's API child (``fleet.api_process.child_environment``): it must
reach the servers the node started, not those its own environment names (or the embedded
defaults it would otherwise start), and run the API alone. (The child itself, started, killed
and restarted with its node: ``tests/e2e/test_api_process.py``.)"""

from __future__ import annotations

from pathlib import Path

from fleet.api_process import child_environment
from fleet.config import Settings
from fleet.endpoints import Endpoints


def test_the_child_reaches_the_nodes_servers_and_runs_the_api_alone(tmp_path: Path) -> None:
    given = {
        "NATS_URL": "nats://elsewhere:4222",  # a seed name the child would read first otherwise
        "REDIS_URL": "redis://elsewhere:6379",
        "VLLM_URL": "http://elsewhere:8000",
        "FLEET_API_TOKEN": "secret-token",
        "FLEET_COUNCILS": '{"DEV": {"agents": [{}]}}',
        "FLEET_METRICS_PORT": "9095",
    }
    s = Settings.from_env(
        {**given, "FLEET_DATA_DIR": str(tmp_path), "FLEET_API_PROCESS": "child"},
        grpc_port=50999,
    )
    node = Endpoints(
        nats_url="nats://127.0.0.1:4333",
        valkey_url="redis://127.0.0.1:6380",
        llm_url="http://127.0.0.1:8081/v1",
        model="gemma",
    )
    env = child_environment(s, node, given)
    child = Settings.from_env(env)
    assert child.components == frozenset({"api"}) and child.api_process == "inline"
    assert child.nats_url == node.nats_url and child.valkey_url == node.valkey_url
    assert child.vllm_url == node.llm_url and child.vllm_model == "gemma"
    assert child.grpc_port == 50999 and child.metrics_port == 0
    assert child.data_dir == tmp_path / "api"
    assert child.api_token == "secret-token" and "DEV" in child.councils.by_role
    assert child.llm_max_tokens == s.llm_max_tokens

    no_cache = child_environment(s, Endpoints(nats_url=node.nats_url), given)
    assert Settings.from_env(no_cache).cache_enabled is False  # none started: reads replay
