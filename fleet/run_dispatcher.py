"""Wiring of the dispatch side of a Fleet process: agents, the deliberation and plan dispatchers,
the work queue shared with other dispatcher processes, and the plan-approval consumer.

``FleetNode`` (``fleet/bootstrap.py``) calls ``start_agents`` and ``start_dispatch`` for the
``agents`` and ``dispatcher`` components; ``fleet up --components dispatcher`` therefore runs a
dispatcher process of its own (several of them share the work), and the recovery tests SIGKILL
exactly that process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aggregates import Role
from dispatchers.councils import Councils, parse_councils
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from dispatchers.plans import PlanDispatcher, PlanOptions
from fleet.config import ConfigError, Settings

log = logging.getLogger(__name__)


def plan_options(s: Settings) -> PlanOptions:
    """How an approved plan's deliberations are shaped (the dispatcher and ApprovePlan agree)."""
    return PlanOptions(
        num_agents=s.plan_agents, rounds=s.plan_rounds, timeout_seconds=s.deliberation_timeout
    )


@dataclass
class DispatchParts:
    dispatcher: DeliberationDispatcher
    plans: PlanDispatcher
    work_queue: Any = None
    plan_consumer: Any = None


def load_councils(raw: str | None) -> Councils:
    """``FLEET_COUNCILS``: inline JSON, or a path to a JSON or YAML file."""
    if not raw:
        return Councils()
    text = raw
    if not raw.lstrip().startswith("{"):
        path = Path(raw)
        try:
            text = path.read_text()
        except OSError as e:
            raise ConfigError(f"FLEET_COUNCILS={raw!r}: {e}") from None
        if path.suffix in (".yaml", ".yml"):
            import yaml

            return parse_councils(yaml.safe_load(text) or {})
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"FLEET_COUNCILS is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError("FLEET_COUNCILS must be an object of role → council")
    return parse_councils(data)


def structured_output_mode(settings: Settings) -> str:
    if settings.structured_output:
        return settings.structured_output
    # llama.cpp's server constrains with {"type": "json_object", "schema": …}; vLLM and OpenAI
    # take the standard json_schema response format.
    return "json_schema" if settings.vllm_url else "json_object"


async def start_agents(
    stack: contextlib.AsyncExitStack, settings: Settings, llm_url: str, model: str
) -> tuple[Any, str]:
    """The agent runtime: warm Ray actor pools, or council members in this process."""
    from agent_runtime.council import EndpointConfig, LocalAgentRuntime

    roles = [r.value for r in Role]
    mode = structured_output_mode(settings)
    if settings.agent_runtime == "local":
        runtime: Any = LocalAgentRuntime(
            EndpointConfig(
                llm_url,
                model,
                max_in_flight=settings.llm_max_in_flight,
                structured_output=mode,
                thinking=settings.llm_thinking,
            ),
            tuple(roles),
        )
        stack.push_async_callback(runtime.close)
        return runtime, "local (in process)"
    from agent_runtime.ray_runtime import RayAgentRuntime
    from fleet.embedded.ray_local import connect_ray, disconnect_ray

    info = await asyncio.to_thread(connect_ray, settings.ray_address)
    if info["started"]:
        stack.callback(disconnect_ray)
    runtime = await RayAgentRuntime.start(
        llm_url,
        model,
        roles,
        settings.actors_per_role,
        max_in_flight=settings.llm_max_in_flight,
        structured_output=mode,
        thinking=settings.llm_thinking,
    )
    stack.push_async_callback(runtime.close)
    return runtime, settings.ray_address or f"local {info.get('address', '')}"


async def start_dispatch(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    *,
    store: Any,
    feed_factory: Any,
    runtime: Any,
    nats_url: str,
    model: str,
) -> DispatchParts:
    """Start the dispatchers (and their NATS parts) on ``stack``; they stop in reverse."""
    s = settings
    work_queue = None
    if s.work_sharing:
        from dispatchers.jetstream_work_queue import JetStreamWorkQueue

        work_queue = await JetStreamWorkQueue.connect(
            nats_url, stream=f"{s.stream}_WORK", lease_s=s.work_lease_s, replicas=s.stream_replicas
        )
        stack.push_async_callback(work_queue.close)
    dispatcher = DeliberationDispatcher(
        store,
        feed_factory(),
        runtime,
        options=DispatcherOptions(
            call_timeout_s=s.agent_call_timeout,
            model=model,
            max_tokens=s.llm_max_tokens,
            peer_review=s.peer_review,
            councils=load_councils(s.councils),
        ),
        work_queue=work_queue,
    )
    await stack.enter_async_context(dispatcher)
    plans = PlanDispatcher(store, feed_factory(), options=plan_options(s))
    await stack.enter_async_context(plans)
    consumer = None
    if s.plan_consumer:
        from dispatchers.plan_approvals import PlanApprovalConsumer

        consumer = await PlanApprovalConsumer.connect(nats_url, store, replicas=s.stream_replicas)
        await stack.enter_async_context(consumer)
    return DispatchParts(dispatcher, plans, work_queue, consumer)
