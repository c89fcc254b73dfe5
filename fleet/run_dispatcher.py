"""Wiring of the dispatch side of a Fleet process: the deliberation and plan dispatchers, the work
queue shared with other dispatcher processes, and the plan-approval consumer.

``FleetNode`` (``fleet/bootstrap.py``) builds the agents with ``fleet.agents.make_agent_runtime``
(the one module that chooses the agent backend) and calls ``start_dispatch`` for the
``dispatcher`` component; ``fleet up --components dispatcher`` therefore runs a
dispatcher process of its own (several of them share the work), and the recovery tests SIGKILL
exactly that process.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from agent_runtime.api import AgentRuntime
from application.plans import PlanOptions
from application.ports import CouncilDirectory, DerivationStore, EventFeed, StoryStore
from application.task_context import StoreContextSource
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from dispatchers.jetstream.plan_approvals import PlanApprovalConsumer
from dispatchers.jetstream.story_transitions import StoryTransitionConsumer
from dispatchers.jetstream.work_queue import JetStreamWorkQueue
from dispatchers.plans import PlanDispatcher
from fleet.config import Settings

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
    work_queue: JetStreamWorkQueue | None = None
    plan_consumer: PlanApprovalConsumer | None = None
    story_consumer: StoryTransitionConsumer | None = None


async def start_dispatch(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    *,
    store: DerivationStore,
    story_store: StoryStore | None = None,
    feed_factory: Callable[[], EventFeed],
    runtime: AgentRuntime,
    nats_url: str,
    model: str,
    councils: CouncilDirectory | None = None,
) -> DispatchParts:
    """Start the dispatchers (and their NATS parts) on ``stack``; they stop in reverse.

    ``feed_factory`` gives each dispatcher an event feed of its own; ``councils`` is where a
    starting deliberation takes its agents from (None: the default agent ids); ``story_store``
    (where ``planning.story.transitioned`` is recorded) is left out by callers that consume no
    stories.
    """
    s = settings
    work_queue = None
    if s.work_sharing:
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
            councils=s.councils,
            concurrency=s.dispatch_concurrency,
        ),
        work_queue=work_queue,
        context=StoreContextSource(store),
        councils=councils,
    )
    await stack.enter_async_context(dispatcher)
    plans = PlanDispatcher(store, feed_factory(), options=plan_options(s), councils=councils)
    await stack.enter_async_context(plans)
    consumer = None
    if s.plan_consumer:
        consumer = await PlanApprovalConsumer.connect(
            nats_url, store, replicas=s.stream_replicas, start=s.planning_start
        )
        await stack.enter_async_context(consumer)
    stories = None
    if s.plan_consumer and story_store is not None:
        stories = await StoryTransitionConsumer.connect(
            nats_url, story_store, replicas=s.stream_replicas, start=s.planning_start
        )
        await stack.enter_async_context(stories)
    return DispatchParts(dispatcher, plans, work_queue, consumer, stories)
