"""``fleet doctor`` against real parts, one stopped at a time: it names that part, says how to
fix it and exits non-zero; with everything up it exits 0.

The setup: a private nats-server with JetStream, the load generator as the model endpoint, the
session's Valkey, a gRPC health server standing in for a running node (found through the data
dir's run.json, as the other commands find ``fleet up``). Ray is not started: the agents run
locally, and one case points Ray at a ``ray://`` address where nothing listens.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from fleet.embedded._process import free_port
from fleet.embedded.nats import NatsServer
from fleet.embedded.valkey import ValkeyServer
from fleet_testing.loadgen import MODEL, LoadGenServer
from tests.integration.fleet._cli import fleet

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def model() -> AsyncIterator[LoadGenServer]:
    async with LoadGenServer("instant") as server:
        yield server


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Path]:
    """A data dir whose run.json names a live API (this process, serving health SERVING)."""
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    run = {"grpc": f"127.0.0.1:{port}", "pid": os.getpid()}
    (tmp_path / "run.json").write_text(json.dumps(run))
    try:
        yield tmp_path
    finally:
        await server.stop(None)


@pytest.fixture
def env(
    node: Path,
    private_nats_server: NatsServer,
    model: LoadGenServer,
    valkey_server: ValkeyServer,
) -> dict[str, str]:
    return {
        "FLEET_DATA_DIR": str(node),
        "FLEET_NATS_URL": private_nats_server.url,
        "FLEET_VLLM_URL": model.url,
        "FLEET_VLLM_MODEL": MODEL,
        "FLEET_VALKEY_URL": valkey_server.url,
        "FLEET_AGENT_RUNTIME": "local",
        "FLEET_SANDBOX": "off",  # a warning: doctor still exits 0
        # Whatever the machine running the tests has set, these parts are not under test (an
        # empty setting is an unset one).
        "FLEET_ADDRESS": "",
        "FLEET_NEO4J_URI": "",
        "NEO4J_URI": "",
        "FLEET_RAY_ADDRESS": "",
        "RAY_ADDRESS": "",
        "FLEET_AGENT_BACKEND": "ray",
        "FLEET_CACHE": "on",
    }


async def _doctor(env: dict[str, str]) -> tuple[int, dict[str, dict[str, Any]]]:
    out = await fleet("doctor", "--json", "--timeout", "3", env=env, timeout=60)
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    return out.returncode, checks


async def test_everything_up_is_ok_and_exits_0(env: dict[str, str]) -> None:
    code, checks = await _doctor(env)

    assert code == 0, checks
    assert {n: c["status"] for n, c in checks.items()} == {
        "nats": "ok",
        "model": "ok",
        "sandbox": "warn",
        "ray": "ok",
        "graph": "ok",
        "valkey": "ok",
        "api": "ok",
    }
    assert "JetStream on" in checks["nats"]["detail"]
    assert checks["model"]["detail"] == f"serves {MODEL}"
    assert checks["sandbox"]["fix"] == "FLEET_SANDBOX=auto"
    assert checks["api"]["detail"] == "health SERVING"  # found through run.json


async def test_nats_stopped_fails_the_nats_line_with_its_fix(
    env: dict[str, str], private_nats_server: NatsServer
) -> None:
    private_nats_server.stop()

    out = await fleet("doctor", "--timeout", "3", env=env, timeout=60)

    assert out.returncode == 1, out.stdout
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["FAIL", "nats"])
    assert private_nats_server.url in lines[at] and "unreachable" in lines[at]
    fix = "fix: start nats-server -js there, or set NATS_URL (unset: `fleet up` starts one)"
    assert lines[at + 1].strip() == fix
    assert not any(line.startswith("FAIL") for i, line in enumerate(lines) if i != at)
    assert out.stderr.strip() == "error: 1 check(s) failed: nats"


async def test_model_endpoint_stopped_names_the_model(
    env: dict[str, str], model: LoadGenServer
) -> None:
    await model.stop()

    code, checks = await _doctor(env)

    assert code == 1
    assert checks["model"]["status"] == "fail"
    assert MODEL in checks["model"]["detail"] and "VLLM_URL" in checks["model"]["fix"]
    assert [n for n, c in checks.items() if c["status"] == "fail"] == ["model"]


async def test_a_model_the_endpoint_does_not_serve_is_named_with_those_it_does(
    env: dict[str, str],
) -> None:
    code, checks = await _doctor({**env, "FLEET_VLLM_MODEL": "Qwen/Qwen3-0.6B"})

    assert code == 1
    assert checks["model"]["detail"] == f"does not serve Qwen/Qwen3-0.6B (it serves: {MODEL})"
    assert checks["model"]["fix"] == f"set VLLM_MODEL to one of: {MODEL}"


async def test_a_bad_valkey_url_names_valkey(env: dict[str, str]) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"

    code, checks = await _doctor({**env, "FLEET_VALKEY_URL": closed})

    assert code == 1
    assert checks["valkey"]["status"] == "fail" and checks["valkey"]["checked"] == closed
    assert "VALKEY_URL" in checks["valkey"]["fix"]
    assert [n for n, c in checks.items() if c["status"] == "fail"] == ["valkey"]


async def test_an_unreachable_ray_address_names_ray(env: dict[str, str]) -> None:
    address = f"ray://127.0.0.1:{free_port()}"

    code, checks = await _doctor({**env, "FLEET_AGENT_RUNTIME": "ray", "RAY_ADDRESS": address})

    assert code == 1
    assert checks["ray"]["status"] == "fail" and checks["ray"]["checked"] == address
    assert "RAY_ADDRESS" in checks["ray"]["fix"]


async def test_a_private_neo4j_without_its_jars_names_the_graph_and_make_neo4j(
    env: dict[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "no-neo4j-here"

    code, checks = await _doctor({**env, "FLEET_GRAPH": "neo4j", "FLEET_NEO4J_HOME": str(empty)})

    assert code == 1
    assert checks["graph"]["status"] == "fail" and "not set up" in checks["graph"]["detail"]
    assert checks["graph"]["fix"] == "make neo4j"
    assert [n for n, c in checks.items() if c["status"] == "fail"] == ["graph"]


async def test_a_private_neo4j_without_its_class_archive_is_a_warning_naming_make_neo4j(
    env: dict[str, str], tmp_path: Path
) -> None:
    """It starts without one, a third slower: a warning (exit 0), and ok once it is there."""
    home = tmp_path / "neo4j-home"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "neo4j-kernel-5.26.0.jar").touch()
    (home / "classes").mkdir()
    (home / "classes" / "FleetNeo4j.jar").touch()
    graph_env = {**env, "FLEET_GRAPH": "neo4j", "FLEET_NEO4J_HOME": str(home)}

    code, checks = await _doctor(graph_env)
    assert checks["graph"]["status"] == "warn", checks["graph"]
    assert "no class archive" in checks["graph"]["detail"]
    assert checks["graph"]["fix"] == "make neo4j"
    assert code == 0

    (home / "classes" / "neo4j.jsa").touch()
    code, checks = await _doctor(graph_env)
    assert checks["graph"]["status"] == "ok" and "class archive" in checks["graph"]["detail"]
