"""The production AgentRuntime: warm pools of Ray async actors, one pool per role (a council).

Pools are created once, at start-up, and serve every deliberation; an actor is never created per
deliberation (the seed paid actor start-up, seconds on a loaded machine, on every request). An
agent id maps to an actor of its role's pool deterministically (a trailing number is used as the
index, otherwise CRC-32 of the id), so a redelivered turn goes where the first one went.

Actors are async (``async def`` methods), so one actor serves many turns at once while each waits
on HTTP; they reserve no CPU (``num_cpus=0``): the work is I/O-bound and the model server owns
the cores. ``max_restarts`` brings a dead actor back; ``max_task_retries=1`` re-sends a turn that
was running when its actor died, which is safe because a turn is idempotent by its key (the
dispatcher records one answer per agent and round). Calls to one actor that start together (a
deliberation's agents in one phase; deliberations released together) travel as one Ray call, and
their answers come back together unless one is slow (``_batches``): a Ray call's fixed cost,
not the agents' work, was what a busy two-core machine queued on. An actor that holds all of a
last round's agents starts the final ratings the dispatcher has promised to ask for as the last
answer comes in, and the requests join those calls (``_early_ratings``): a Ray round trip less
between a deliberation's two phases.

The caller owns ``ray.init`` (the composition root, or the test fixture); this module never
initialises Ray. It works the same as a driver on the cluster and as a Ray client (``ray://``,
what the Kubernetes manifests use); the actors' code is imported on the workers, never shipped.
In async code object refs are awaited through ``_refs`` (a client's would block the loop)
and ``ray.get`` is never called.

(Over 400 lines on purpose: the actor and the driver-side runtime are the two ends of one call
and change together; the batching and the early ratings already live in their own modules.)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, cast

import ray
from ray.actor import ActorClass
from ray.exceptions import RayError

from agent_runtime.api import (
    AgentRuntimeError,
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    Candidate,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.checks.sandbox import DisabledSandbox, SandboxState
from agent_runtime.checks.scoring import assess_candidates, needs_sandbox, with_peer_reviews
from agent_runtime.member.caller import CouncilMember, EndpointConfig
from agent_runtime.member.openai_client import RetryPolicy
from agent_runtime.ray_backend import _refs
from agent_runtime.ray_backend._batches import (
    ActorBatches,
    BatchingActor,
    CallBatcher,
    Outcome,
    RemoteMethod,
)
from agent_runtime.ray_backend._early_ratings import EarlyRatings
from lifecycle.collector import tune_collector

__all__ = ["ActorStats", "AgentActor", "RayAgentRuntime", "pool_index"]

_TRAILING_NUMBER = re.compile(r"(\d+)$")

DRIVER_GRACE_S = 5.0
"""Extra time the driver waits past a turn's own timeout before giving up on the actor (the
client enforces the turn's deadline; this only catches a stuck or dead actor)."""
PRECHECK_TIMEOUT_S = 30.0
"""How long an early check on an actor may take before ``assess`` checks in this process."""
_NOT_HERE = DisabledSandbox(
    "the agent runtime's actor did not check it; the dispatcher never runs model code"
)
CONNECTION_CHECK_S = 5.0
"""How often ``watch_connection`` checks that Ray is still reachable."""
PRECHECKS_KEPT = 4096
"""Early checks kept for an ``assess`` that has not come (yet): the oldest go first."""


@dataclass(frozen=True)
class ActorStats:
    """What one actor has done: lets tests and operators see that pools stay warm."""

    role: str
    index: int
    actor_id: str
    pid: int
    turns_served: int
    turns_failed: int
    node_id: str = ""
    """The Ray node the actor runs on (a cluster spreads pools over nodes)."""
    early_ratings_joined: int = 0
    """Final ratings answered by a call the actor had started early (``_early_ratings``)."""


def pool_index(agent_id: str, pool_size: int) -> int:
    """Which actor of a pool serves ``agent_id``: stable across processes and restarts.

    ``agent-dev-2`` → 2 mod size (so a deliberation's agents spread over the pool);
    other ids → CRC-32 mod size (Python's ``hash`` is salted per process, so it is not used).
    """
    if pool_size < 1:
        raise ValueError(f"pool_size must be >= 1, got {pool_size}")
    m = _TRAILING_NUMBER.search(agent_id)
    key = int(m.group(1)) if m else zlib.crc32(agent_id.encode())
    return key % pool_size


class AgentActor:
    """A Ray async actor holding one CouncilMember (and so one HTTP client and session).

    Wrapped with ``ray.remote`` by ``RayAgentRuntime.start``; the class itself is plain so it can
    be read and type-checked like any other.
    """

    def __init__(self, role: str, index: int, endpoint: EndpointConfig) -> None:
        self._member = CouncilMember(role, endpoint)
        self._index = index
        self._early = EarlyRatings(self._member.review)
        self._batches = ActorBatches(
            {
                "run_turn": self.run_turn,
                "review": self.review,
                "assess": self.assess,
            }
        )
        # Its process is the actor's alone, and long-running: collected as ``fleet up`` is. With
        # Python's thresholds a saturated DEV actor spent ~5% of its CPU in young passes over
        # what Ray and the member had allocated (3 ms each, a full one 120 ms).
        tune_collector()

    async def ping(self) -> str:
        """Answers once the actor is up; returns its Ray actor id."""
        return ray.get_runtime_context().get_actor_id() or ""

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        try:
            result = await self._member.run_turn(turn)
        except BaseException:
            self._early.failed(turn)
            raise
        self._early.answered(turn, result.content)  # see ``_early_ratings``
        return result

    async def review(self, request: ReviewInput) -> ReviewResult:
        return await self._early.review(request)

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        """The checks, here rather than on the caller's loop (``precheck``), and off this
        actor's loop: DEV candidates run in the sandbox while the actor's turns go on."""
        return await asyncio.to_thread(self._member.assess, request)

    async def run_batch(
        self, batch_id: str, calls: list[tuple[str, object, str]], linger_s: float, keep_s: float
    ) -> list[Outcome]:
        """Several calls in one Ray call (see ``_batches``)."""
        return await self._batches.run(batch_id, calls, linger_s, keep_s)

    async def collect(self, batch_id: str, indexes: list[int], linger_s: float) -> list[Outcome]:
        return await self._batches.collect(batch_id, indexes, linger_s)

    async def stats(self) -> ActorStats:
        return ActorStats(
            role=self._member.role,
            index=self._index,
            actor_id=ray.get_runtime_context().get_actor_id() or "",
            pid=os.getpid(),
            turns_served=self._member.turns_served,
            turns_failed=self._member.turns_failed,
            node_id=ray.get_runtime_context().get_node_id() or "",
            early_ratings_joined=self._early.joined,
        )

    async def sandbox(self) -> SandboxState:
        """This actor's sandbox, as its process probed it (where its DEV checks run)."""
        return SandboxState.of(self._member.endpoint.sandbox, self._member.sandbox)

    async def close(self) -> None:
        await self._member.close()


@dataclass(frozen=True)
class _Precheck:
    """One candidate's early check (``RayAgentRuntime.precheck``), and what it checked."""

    role: str
    requirements: tuple[str, ...]
    content: str
    future: asyncio.Future[list[Assessment]]
    index: int
    """The candidate's place in the early call's answer."""


class AgentActorHandle(BatchingActor, Protocol):
    """An ``AgentActor`` as its Ray handle shows it (an ``ActorHandle[AgentActor]`` is one): the
    methods this runtime calls, with what their calls come back with. Ray types a handle's
    methods as ``Never``, which would hide every mistake made with them."""

    @property
    def ping(self) -> RemoteMethod[str]: ...

    @property
    def stats(self) -> RemoteMethod[ActorStats]: ...

    @property
    def sandbox(self) -> RemoteMethod[SandboxState]: ...

    @property
    def close(self) -> RemoteMethod[None]: ...


def _retrieved(future: asyncio.Future[list[Assessment]]) -> None:
    """Takes an early check's outcome, so that one nobody awaits is not reported as lost."""
    if not future.cancelled():
        future.exception()


_RemoteAgentActor: ActorClass[AgentActor] | None = None


def _remote_actor_class() -> ActorClass[AgentActor]:
    # Wrapped lazily so importing this module does not touch Ray (no I/O at import time).
    global _RemoteAgentActor
    if _RemoteAgentActor is None:
        _RemoteAgentActor = ray.remote(AgentActor)
    return _RemoteAgentActor


class RayAgentRuntime:
    """AgentRuntime on warm Ray actor pools. Build it with ``await RayAgentRuntime.start(...)``.

    Loop affinity: the event loop that called ``start`` (its in-flight semaphore lives there).

    Args:
        pools: role (upper case) → its actors, already started and answering.
        endpoint: the endpoint the actors call (kept for messages).
        max_in_flight: turns this runtime has outstanding at once, over all actors: the bound on
            concurrent calls to the endpoint (each actor's client also bounds its own).
    """

    def __init__(
        self,
        pools: Mapping[str, Sequence[AgentActorHandle]],
        *,
        endpoint: EndpointConfig,
        max_in_flight: int,
    ) -> None:
        self._pools = {role.upper(): list(actors) for role, actors in pools.items()}
        self.endpoint = endpoint
        self._slots = asyncio.Semaphore(max_in_flight)
        self._batcher = CallBatcher()
        self._prechecks: dict[tuple[str, str], _Precheck] = {}
        self._closed = False
        self._watch: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        endpoint_url: str,
        model: str,
        roles: Sequence[str],
        agents_per_role: int,
        *,
        max_in_flight: int = 8,
        retry: RetryPolicy | None = None,
        api_key: str | None = None,
        max_restarts: int = 3,
        ready_timeout_s: float = 120.0,
        actor_options: Mapping[str, object] | None = None,
        structured_output: str = "json_schema",
        thinking: str = "auto",
        sandbox: str = "auto",
    ) -> RayAgentRuntime:
        """Create one pool of ``agents_per_role`` actors per role and wait until all answer.

        Args:
            endpoint_url: OpenAI-compatible base URL (vLLM or the embedded llama.cpp server).
            model: model name to request.
            roles: e.g. ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA").
            agents_per_role: actors per role pool (≥ 1). Several agents may share an actor.
            max_in_flight: bound on concurrent calls to the endpoint from this runtime.
            retry: the client's back-off policy.
            api_key: bearer token for the endpoint, when it needs one.
            max_restarts: how often Ray restarts a dead actor.
            ready_timeout_s: how long to wait for the actors to come up.
            actor_options: extra ``.options(...)`` for the actors (e.g. a runtime_env).
            structured_output: how reviews ask for JSON (``caller.STRUCTURED_OUTPUT_MODES``).
            thinking: how a reasoning model thinks, ``auto``, ``on`` or ``off``
                (``EndpointConfig.thinking``).
            sandbox: where the actors run candidates' code (``EndpointConfig.sandbox``).

        Raises:
            AgentRuntimeError: Ray is not initialised, or the actors did not come up in time.
        """
        if not ray.is_initialized():
            raise AgentRuntimeError("Ray is not initialised: the composition root calls ray.init")
        if agents_per_role < 1:
            raise ValueError(f"agents_per_role must be >= 1, got {agents_per_role}")
        per_actor = max(1, -(-max_in_flight // max(agents_per_role, 1)))
        endpoint = EndpointConfig(
            url=endpoint_url,
            model=model,
            max_in_flight=per_actor,
            retry=retry or RetryPolicy(),
            api_key=api_key,
            structured_output=structured_output,
            thinking=thinking,
            sandbox=sandbox,
        )
        options: dict[str, object] = {
            "num_cpus": 0,
            "max_restarts": max_restarts,
            "max_task_retries": 1,
            # Room for the client's queue plus control calls (ping, stats, close).
            "max_concurrency": max(per_actor * 4, 16),
            **dict(actor_options or {}),
        }
        remote = _remote_actor_class()
        pools: dict[str, list[AgentActorHandle]] = {}
        for role in dict.fromkeys(r.upper() for r in roles):
            # ``ActorClass.remote`` is typed as the handle or the class (for editors): a handle.
            pools[role] = [
                cast(AgentActorHandle, remote.options(**options).remote(role, i, endpoint))
                for i in range(agents_per_role)
            ]
        runtime = cls(pools, endpoint=endpoint, max_in_flight=max_in_flight)
        try:
            actors = [a for pool in pools.values() for a in pool]
            pings = [_refs.result(a.ping.remote()) for a in actors]
            await asyncio.wait_for(asyncio.gather(*pings), ready_timeout_s)
        except (TimeoutError, RayError, ConnectionError) as e:  # the last: a Ray client, cut off
            await runtime.close()
            msg = f"agent actors for {list(pools)} not ready after {ready_timeout_s:.0f} s: {e}"
            raise AgentRuntimeError(msg) from e
        return runtime

    # -- routing

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self._pools)

    def actor_for(self, role: str, agent_id: str) -> AgentActorHandle:
        """The actor that serves ``agent_id`` of ``role``. Raises AgentTurnError if no pool."""
        if self._closed:
            raise AgentTurnError(f"runtime is closed (agent {agent_id})")
        pool = self._pools.get(role.upper())
        if not pool:
            raise AgentTurnError(f"no council for role {role!r} (roles: {sorted(self._pools)})")
        return pool[pool_index(agent_id, len(pool))]

    # -- the Protocol

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        """Run one turn on its agent's actor.

        Raises:
            AgentTurnError: the model call failed, the actor died or did not answer in time.
        """
        actor = self.actor_for(turn.role, turn.agent_id)
        key = f"turn {turn.key}"
        result = await self._call(
            actor, "run_turn", turn, key, turn.timeout_s, turn.deliberation_id
        )
        if not isinstance(result, TurnResult):
            msg = f"turn {turn.key}: actor returned {type(result).__name__}, not TurnResult"
            raise AgentTurnError(msg)
        return result

    async def review(self, request: ReviewInput) -> ReviewResult:
        """Run one peer review on the reviewer's actor. Raises AgentTurnError as run_turn."""
        actor = self.actor_for(request.role, request.agent_id)
        key = f"review {request.key}"
        result = await self._call(
            actor, "review", request, key, request.timeout_s, request.deliberation_id
        )
        if not isinstance(result, ReviewResult):
            msg = f"review {request.key}: actor returned {type(result).__name__}"
            raise AgentTurnError(msg)
        return result

    @property
    def ray_calls(self) -> int:
        """Ray calls sent for agent work (calls to one actor that start together share one)."""
        return self._batcher.ray_calls

    async def _call(
        self,
        actor: AgentActorHandle,
        method: str,
        arg: object,
        key: str,
        timeout_s: float,
        group: str,
    ) -> object:
        """One bounded call: a slot, the actor's own deadline plus grace, errors named.
        ``group``: its deliberation, whose calls of a phase are awaited together."""
        async with self._slots:
            future = self._batcher.submit(
                actor, method, arg, key=key, timeout_s=timeout_s, group=group
            )
            try:
                return await asyncio.wait_for(future, timeout_s + DRIVER_GRACE_S)
            except TimeoutError:
                msg = f"{key}: actor gave no answer within {timeout_s:.1f} s"
                raise AgentTurnError(msg) from None

    def precheck(self, request: AssessmentInput) -> None:
        """Start the executable checks of ``request``'s candidates on an actor, now.

        The dispatcher calls this as soon as a deliberation's final proposals are known, while
        its peers are still rating them: the checks read the text alone, so they run during the
        model's seconds, on an actor's process rather than on the dispatcher's loop (where,
        with fifty deliberations finishing together, their compiling was what the last ones
        queued behind). ``assess`` then only folds the ratings in. A hint: ``assess`` gives the
        same answer without it, or when the early check failed.
        """
        if self._closed or not request.candidates:
            return
        pool = self._pools.get(request.role.upper())
        if not pool:
            return
        # The text alone: no ratings yet, and none folded in (``assess`` does that).
        texts = tuple(Candidate(c.agent_id, c.content) for c in request.candidates)
        plain = replace(request, candidates=texts, peer_review=False)
        actor = pool[zlib.crc32(request.deliberation_id.encode()) % len(pool)]
        key = f"checks {request.deliberation_id}"
        # What ``AgentActor.assess`` returns: the Ray call carries no type.
        future = cast(
            "asyncio.Future[list[Assessment]]",
            self._batcher.submit(
                actor,
                "assess",
                plain,
                key=key,
                timeout_s=PRECHECK_TIMEOUT_S,
                group=plain.deliberation_id,
            ),
        )
        future.add_done_callback(_retrieved)
        for i, c in enumerate(plain.candidates):
            self._prechecks[(request.deliberation_id, c.agent_id)] = _Precheck(
                request.role.upper(), request.requirements, c.content, future, i
            )
        while len(self._prechecks) > PRECHECKS_KEPT:
            del self._prechecks[next(iter(self._prechecks))]

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        """The executable checks and scores: from ``precheck`` where it checked the same text,
        otherwise in this process.

        DEV candidates (and any whose scoring runs something: ``scoring.needs_sandbox``) always
        on an actor (``precheck`` now, if it was not asked early): their code runs in the
        actor's sandbox, never in this process, which is the dispatcher's.
        If the actor fails, they are checked here without running anything ("not run").
        Other roles in this process when nobody asked early: their checks only read text the
        caller already holds (nothing the model wrote is executed), while a Ray round trip is
        1-20 ms on a loaded machine and would sit on the critical path. Always on a worker
        thread: the role checks' linters (ruff, shellcheck, hadolint) are processes, 5-20 ms
        each, whose waits release the GIL, so the loop runs meanwhile.
        """
        if self._closed:
            raise AgentRuntimeError(f"runtime is closed (assessment of {request.deliberation_id})")
        out: dict[int, Assessment] = {}
        for i, c in enumerate(request.candidates):
            checked = await self._early(request, c)
            if checked is not None:
                peers = request.peer_review
                out[i] = with_peer_reviews(checked, c, request.role) if peers else checked
        rest = [c for i, c in enumerate(request.candidates) if i not in out]
        if rest and needs_sandbox(request):
            # Their code runs in an actor's sandbox, never in this (the dispatcher's) process.
            left = replace(request, candidates=tuple(rest))
            self.precheck(left)
            for i, c in enumerate(request.candidates):
                if i not in out and (checked := await self._early(left, c)) is not None:
                    out[i] = (
                        with_peer_reviews(checked, c, request.role) if left.peer_review else checked
                    )
            rest = [c for i, c in enumerate(request.candidates) if i not in out]
        if rest:
            left = replace(request, candidates=tuple(rest))
            here = iter(await asyncio.to_thread(assess_candidates, left, _NOT_HERE))
            for i in range(len(request.candidates)):
                if i not in out:
                    out[i] = next(here)
        return [out[i] for i in range(len(request.candidates))]

    async def _early(self, request: AssessmentInput, c: Candidate) -> Assessment | None:
        """The early check of exactly this text, role and requirements, if one ran and
        answered; None otherwise (the caller checks it itself)."""
        e = self._prechecks.pop((request.deliberation_id, c.agent_id), None)
        if e is None or (e.role, e.requirements, e.content) != (
            request.role.upper(),
            request.requirements,
            c.content,
        ):
            return None
        try:
            answer = await asyncio.wait_for(asyncio.shield(e.future), PRECHECK_TIMEOUT_S)
        except Exception:  # the actor failed or is late: checked here instead
            return None
        checked = answer[e.index] if e.index < len(answer) else None
        return checked if checked is not None and checked.agent_id == c.agent_id else None

    async def stats(self) -> list[ActorStats]:
        """Every actor's counters, pool by pool."""
        refs = [a.stats.remote() for actors in self._pools.values() for a in actors]
        return list(await asyncio.gather(*map(_refs.result, refs)))

    def watch_connection(self, interval_s: float = CONNECTION_CHECK_S) -> None:
        """Start checking that this process still reaches Ray; ``background_tasks`` then holds
        a task that ends with AgentRuntimeError once the connection is lost for good.

        For a Ray client (``ray://``): when the cluster's head goes away, the client retries for
        its reconnect grace and then gives up for good, while the process would go on as if it
        had agents, none of which it can reach. A supervisor that sees this task end
        restarts the process, which connects again and resumes from the events. A client that is
        idle looks connected until it sends something, so the check pings an actor.
        """
        if self._watch is None and not self._closed:
            self._watch = asyncio.get_running_loop().create_task(self._check_connection(interval_s))

    def background_tasks(self) -> list[asyncio.Task[None]]:
        """The connection check, once ``watch_connection`` started it."""
        return [self._watch] if self._watch is not None else []

    async def _check_connection(self, interval_s: float) -> None:
        actors = [a for pool in self._pools.values() for a in pool]
        for i in itertools.count():
            if not _refs.connected():
                msg = "lost the connection to Ray: agent calls cannot reach the cluster"
                raise AgentRuntimeError(msg)
            # Errors here are not the verdict: a lost connection shows in ``connected`` next.
            with contextlib.suppress(Exception):
                ping = _refs.result(actors[i % len(actors)].ping.remote())
                await asyncio.wait_for(ping, interval_s)
            await asyncio.sleep(interval_s)

    async def sandboxes(self) -> list[SandboxState]:
        """Every actor's sandbox, pool by pool: the checks run in the actors' processes, which
        on a cluster are other machines (pods) than this one."""
        refs = [a.sandbox.remote() for actors in self._pools.values() for a in actors]
        return list(await asyncio.gather(*refs))

    async def close(self) -> None:
        """Close the actors' HTTP sessions, then kill the actors. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, AgentRuntimeError):
                await self._watch
        actors = [a for pool in self._pools.values() for a in pool]
        if not _refs.connected():
            return  # the cluster (or the connection to it) is gone, its actors with it
        # Exception, not RayError alone: a client whose connection dropped raises a plain one.
        with contextlib.suppress(Exception):
            closing = (_refs.result(a.close.remote()) for a in actors)
            await asyncio.wait_for(asyncio.gather(*closing), 5.0)
        await asyncio.gather(*(_refs.kill(a) for a in actors))
