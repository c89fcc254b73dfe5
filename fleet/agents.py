"""Which agent backend a process uses, built from settings: the one place that chooses.

``FLEET_AGENT_BACKEND``:

* ``ray`` (default): warm Ray actor pools per role (``agent_runtime.ray_backend.runtime``), or with
  ``FLEET_AGENT_RUNTIME=local`` the same council members in this process
  (``agent_runtime.member.caller.LocalAgentRuntime``); ``start_council`` builds either.
* ``nats``: agent calls go over a JetStream work queue to ``fleet worker`` processes
  (``agent_runtime.nats_backend.runtime`` / ``agent_runtime.nats_backend.worker``). ``fleet up``
  also starts ``FLEET_LOCAL_WORKERS`` workers per role inside its own process (default 1; set 0
  where ``fleet worker`` pods do the work). In-process rather than child processes: on one machine a
  child per role would cost an interpreter and its imports each (~100 MB, seconds of start-up)
  and buy nothing; the in-process workers still go through the real queue, consumer and acks,
  so the path is the one remote workers take, and ``fleet worker`` processes started anywhere
  join the same queues.

``make_agent_runtime`` is what ``FleetNode`` calls and what tests parametrise over backends with.
Ray itself is imported only when the Ray backend is chosen (it takes seconds to import).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import nats

from agent_runtime.api import AgentRuntime
from agent_runtime.checks.sandbox import SandboxState, announce, open_sandbox
from agent_runtime.member.caller import CouncilMember, EndpointConfig, LocalAgentRuntime
from agent_runtime.nats_backend.runtime import NatsAgentRuntime, QueueNames
from agent_runtime.nats_backend.worker import AgentWorker
from aggregates import Role
from fleet.config import Settings
from natsio import servers

if TYPE_CHECKING:
    from agent_runtime.ray_backend.runtime import RayAgentRuntime

log = logging.getLogger(__name__)

BACKENDS = ("ray", "nats")


def queue_names(settings: Settings) -> QueueNames:
    """The NATS backend's stream and subject names: namespaced by the event stream's name."""
    return QueueNames(settings.stream)


def structured_output_mode(settings: Settings) -> str:
    """How agents ask the model for JSON: ``FLEET_STRUCTURED_OUTPUT``, else by server."""
    if settings.structured_output:
        return settings.structured_output
    # llama.cpp's server constrains with {"type": "json_object", "schema": …}; vLLM and OpenAI
    # take the standard json_schema response format.
    return "json_schema" if settings.vllm_url else "json_object"


def worker_endpoint(settings: Settings, llm_url: str, model: str) -> EndpointConfig:
    """How a worker calls the model: one client per worker, ``worker_concurrency`` in flight."""
    return EndpointConfig(
        url=llm_url,
        model=model,
        max_in_flight=settings.worker_concurrency,
        structured_output=structured_output_mode(settings),
        thinking=settings.llm_thinking,
        sandbox=settings.sandbox,
    )


async def start_workers(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    *,
    nats_url: str,
    llm_url: str,
    model: str,
    roles: Sequence[str],
    per_role: int = 1,
    drain_s: float = 10.0,
) -> list[AgentWorker]:
    """Start ``per_role`` workers for each role on one NATS connection; stopped by ``stack``."""
    nc = await nats.connect(
        servers(nats_url), name="fleet-agent-workers", max_reconnect_attempts=-1
    )
    stack.push_async_callback(nc.drain)
    names = queue_names(settings)
    endpoint = worker_endpoint(settings, llm_url, model)
    workers = []
    for role in dict.fromkeys(r.upper() for r in roles):
        for i in range(per_role):
            worker = AgentWorker(
                nc,
                names,
                role,
                CouncilMember(role, endpoint),
                concurrency=settings.worker_concurrency,
                ack_wait_s=settings.worker_ack_wait,
                max_deliver=settings.worker_max_deliver,
                duplicate_window_s=settings.agent_queue_dedupe_window,
                drain_s=drain_s,
                replicas=settings.stream_replicas,
            )
            if per_role > 1:
                worker.worker_id += f":{i}"
            await stack.enter_async_context(worker)
            workers.append(worker)
    return workers


class Watch(Protocol):
    """Registers a part whose background tasks the node watches (``FleetNode.watch``)."""

    def __call__(self, name: str, part: RayAgentRuntime) -> None: ...


async def start_council(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    llm_url: str,
    model: str,
    *,
    watch: Watch | None = None,
) -> tuple[AgentRuntime, str]:
    """The ``ray`` backend: warm Ray actor pools, or (``FLEET_AGENT_RUNTIME=local``) council
    members in this process; and a line saying where they run.

    Connected as a Ray client, the runtime checks its connection and ``watch`` gets it: a node
    whose client lost the cluster for good stops (and is restarted) rather than failing every
    agent call from then on (``RayAgentRuntime.watch_connection``).
    """
    roles = [r.value for r in Role]
    mode = structured_output_mode(settings)
    if settings.agent_runtime == "local":
        local = LocalAgentRuntime(
            EndpointConfig(
                llm_url,
                model,
                max_in_flight=settings.llm_max_in_flight,
                structured_output=mode,
                thinking=settings.llm_thinking,
                sandbox=settings.sandbox,
            ),
            tuple(roles),
        )
        stack.push_async_callback(local.close)
        return local, "local (in process)"
    from agent_runtime.ray_backend.runtime import RayAgentRuntime
    from fleet.embedded.ray_local import connect_ray, disconnect_ray

    info = await asyncio.to_thread(connect_ray, settings.ray_address)
    if info["started"]:
        stack.callback(disconnect_ray)
    ray_runtime = await RayAgentRuntime.start(
        llm_url,
        model,
        roles,
        settings.actors_per_role,
        max_in_flight=settings.llm_max_in_flight,
        structured_output=mode,
        thinking=settings.llm_thinking,
        sandbox=settings.sandbox,
    )
    stack.push_async_callback(ray_runtime.close)
    if info.get("client") and watch is not None:
        ray_runtime.watch_connection()
        watch("Ray client connection", ray_runtime)
    return ray_runtime, info["address"] if settings.ray_address else f"local {info['address']}"


async def make_agent_runtime(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    *,
    llm_url: str,
    model: str,
    nats_url: str,
    watch: Watch | None = None,
) -> tuple[AgentRuntime, str]:
    """The ``AgentRuntime`` the dispatcher calls, and a line saying where agents run.

    Everything started is stopped by ``stack`` (newest first); ``watch`` gets the parts whose
    background tasks must run as long as the node does.
    """
    if settings.agent_backend != "nats":
        return await start_council(stack, settings, llm_url, model, watch=watch)
    roles = [r.value for r in Role]
    runtime = await NatsAgentRuntime.connect(
        nats_url,
        queue_names(settings),
        duplicate_window_s=settings.agent_queue_dedupe_window,
        assess_timeout_s=max(settings.agent_call_timeout, 30.0),
        replicas=settings.stream_replicas,
    )
    stack.push_async_callback(runtime.close)
    where = f"NATS work queue {runtime.names.work_stream}"
    if settings.local_workers > 0:
        await start_workers(
            stack,
            settings,
            nats_url=nats_url,
            llm_url=llm_url,
            model=model,
            roles=roles,
            per_role=settings.local_workers,
        )
        where += (
            f", {settings.local_workers} in-process worker(s) per role "
            f"x{settings.worker_concurrency}"
        )
    else:
        where += " (served by `fleet worker` processes)"
    return runtime, where


async def checks_sandbox(settings: Settings, runtime: AgentRuntime) -> SandboxState | None:
    """The sandbox where this node's agent checks run, as those processes found it, logged once
    (``sandbox.announce``: one warning line with the probe's reason when it cannot start).

    The Ray actors are asked (on a cluster they are other pods, with their own kernel
    permissions); in-process councils and workers share this process's sandbox. None where this
    node cannot know: with the ``nats`` backend and no in-process workers the checks run in
    ``fleet worker`` processes, and each of those announces its own at start.
    """
    if settings.agent_backend == "nats" and settings.local_workers <= 0:
        return None
    if settings.agent_backend != "nats" and settings.agent_runtime != "local":
        from agent_runtime.ray_backend.runtime import RayAgentRuntime

        if isinstance(runtime, RayAgentRuntime):
            states = await runtime.sandboxes()
            down = [s for s in states if not s.available]
            state = down[0] if down else states[0]
            where = f"{len(down) or len(states)} of {len(states)} Ray actors"
            announce(state, where)
            return state
    here = await asyncio.to_thread(open_sandbox, settings.sandbox)
    state = SandboxState.of(settings.sandbox, here)
    announce(state)
    return state
