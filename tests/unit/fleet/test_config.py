"""Settings come from FLEET_* first, then the seed system's names; bad values name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.config import EMBEDDED_MODEL_ALIAS, ConfigError, Settings


def test_seed_names_are_read() -> None:
    s = Settings.from_env(
        {
            "NATS_URL": "nats://nats:4222",
            "NEO4J_URI": "bolt://neo4j:7687",
            "VLLM_URL": "http://vllm:8000",
            "RAY_ADDRESS": "ray://head:10001",
            "DELIBERATION_TIMEOUT": "120",
            "DELIBERATION_CLEANUP": "60",
        }
    )
    assert (s.nats_url, s.neo4j_uri, s.vllm_url) == (
        "nats://nats:4222",
        "bolt://neo4j:7687",
        "http://vllm:8000",
    )
    assert s.ray_address == "ray://head:10001"
    assert (s.deliberation_timeout, s.deliberation_cleanup) == (120, 60)
    assert s.vllm_model == "Qwen/Qwen3-0.6B"


def test_fleet_up_serves_its_api_from_a_child_unless_told_otherwise() -> None:
    """``fleet up``'s API keeps its pace under a burst by default; a program that embeds a node
    gets it in its own process unless it asks."""
    assert Settings.from_env({}).api_process == "child"
    assert Settings.from_env({"FLEET_API_PROCESS": "Inline"}).api_process == "inline"
    assert Settings().api_process == "inline"


def test_a_nodes_endpoints_are_parsed_once_into_typed_settings() -> None:
    """An API child reads the node's endpoints from one variable; keys it does not know (from a
    newer node) are ignored."""
    raw = '{"grpc": "127.0.0.1:50055", "nats_url": "nats://127.0.0.1:4222", "pid": 7, "new": 1}'
    s = Settings.from_env({"FLEET_NODE_ENDPOINTS": raw})
    assert s.node_endpoints is not None
    assert (s.node_endpoints.grpc, s.node_endpoints.nats_url, s.node_endpoints.pid) == (
        "127.0.0.1:50055",
        "nats://127.0.0.1:4222",
        7,
    )
    assert Settings.from_env({}).node_endpoints is None


def test_fleet_names_win_and_empty_means_embedded() -> None:
    s = Settings.from_env(
        {"NATS_URL": "nats://a:1", "FLEET_NATS_URL": "nats://b:2", "VLLM_URL": ""}
    )
    assert s.nats_url == "nats://b:2"
    assert s.vllm_url is None
    assert s.vllm_model == EMBEDDED_MODEL_ALIAS
    assert s.grpc_port == 50055


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"DELIBERATION_TIMEOUT": "soon"}, "FLEET_DELIBERATION_TIMEOUT"),
        ({"DELIBERATION_TIMEOUT": "0"}, "DELIBERATION_TIMEOUT"),
        ({"FLEET_GRPC_PORT": "70000"}, "FLEET_GRPC_PORT"),
        ({"FLEET_STREAM_REPLICAS": "2"}, "FLEET_STREAM_REPLICAS"),
        ({"FLEET_DISPATCH_CONCURRENCY": "-1"}, "FLEET_DISPATCH_CONCURRENCY"),
        ({"FLEET_DISPATCH_CONCURRENCY": "many"}, "FLEET_DISPATCH_CONCURRENCY"),
        ({"FLEET_API_PROCESS": "thread"}, "FLEET_API_PROCESS"),
        ({"FLEET_NODE_ENDPOINTS": "{"}, "FLEET_NODE_ENDPOINTS"),
        ({"FLEET_NODE_ENDPOINTS": "[1]"}, "FLEET_NODE_ENDPOINTS"),
        (
            {"FLEET_NODE_ENDPOINTS": '{"pid": 1, "port": 2, "grpc": {"a": 1}}'},
            "FLEET_NODE_ENDPOINTS",
        ),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env(env)


def test_the_seeds_switches_are_read_where_they_mean_something_in_fleet() -> None:
    assert Settings.from_env({}).auto_init_councils is True
    assert Settings.from_env({"AUTO_INIT_COUNCILS": "false"}).auto_init_councils is False
    assert Settings.from_env({"AGENT_TYPE": "RAY_VLLM"}).agent_runtime == "ray"
    assert Settings.from_env({"AGENT_TYPE": "vllm"}).agent_runtime == "local"
    both = {"AGENT_TYPE": "VLLM", "FLEET_AGENT_RUNTIME": "ray"}
    assert Settings.from_env(both).agent_runtime == "ray"  # Fleet's own name wins
    assert Settings.from_env({"ENABLE_NATS": "true"}).nats_url is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ENABLE_NATS": "false"}, "ENABLE_NATS=false"),
        ({"AGENT_TYPE": "MOCK"}, "AGENT_TYPE=MOCK"),
        ({"AGENT_TYPE": "GPU"}, "AGENT_TYPE='GPU'"),
    ],
)
def test_a_seed_switch_fleet_cannot_honour_stops_the_start_in_one_line(
    env: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError) as e:
        Settings.from_env(env)
    assert str(e.value).startswith(named) and "\n" not in str(e.value)


def test_fleet_councils_is_parsed_once_into_typed_settings(tmp_path: Path) -> None:
    inline = Settings.from_env({"FLEET_COUNCILS": '{"dev": {"agents": [{"model": "big"}, {}]}}'})
    assert [a.model for a in inline.councils.by_role["DEV"]] == ["big", ""]
    file = tmp_path / "councils.yaml"
    file.write_text("QA:\n  agents:\n    - {model: small, temperature: 0.3}\n")
    from_file = Settings.from_env({"FLEET_COUNCILS": str(file)})
    assert from_file.councils.by_role["QA"][0].temperature == 0.3
    assert Settings.from_env({}).councils.by_role == {}


@pytest.mark.parametrize(
    "raw",
    ["{not json", "[1, 2]", '{"NOPE": []}', '{"DEV": {"agents": [{"seed": "x"}]}}', "missing.json"],
)
def test_a_bad_fleet_councils_is_one_line_naming_it(raw: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        Settings.from_env(
            {"FLEET_COUNCILS": raw if raw.startswith(("{", "[")) else str(tmp_path / raw)}
        )
    assert "FLEET_COUNCILS" in str(e.value) and "\n" not in str(e.value)


def test_a_bad_fleet_councils_yaml_file_is_one_line_naming_it(tmp_path: Path) -> None:
    file = tmp_path / "councils.yml"
    file.write_text("DEV:\n  agents: [ {model: a}\n  - x: [\n")
    with pytest.raises(ConfigError) as e:
        Settings.from_env({"FLEET_COUNCILS": str(file)})
    assert "FLEET_COUNCILS" in str(e.value) and "\n" not in str(e.value)
