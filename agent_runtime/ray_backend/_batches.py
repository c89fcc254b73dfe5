"""Fewer, larger Ray calls: agent calls to one actor that start together travel together.

A Ray actor call costs about 1.2 ms of CPU (half in the caller, half in the actor: argument
binding and pickling, a gRPC message each way, a thread hand-off onto the actor's event loop),
measured on this 2-core machine; three calls in one Ray call cost about 0.45 ms each. A
deliberation starts its agents' calls of a phase at the same moment, and fifty deliberations in
flight start many together, so on a loaded machine the per-call cost was what their answers
queued behind (tens of ms at the 99th percentile).

``CallBatcher`` (the caller's side) gathers the calls submitted to one actor during one turn of
the event loop and sends them as one ``run_batch``; a lone call goes as a plain method call.
``ActorBatches`` (the actor's side) starts every call of a batch at once and answers as soon as
all are done, or ``linger_s`` after the first one is, or as soon as the last running call of a
*group* is (the calls one caller waits for together: one deliberation's phase), whichever comes
first: answers that arrive together come back together, an early answer never waits for a slow
sibling more than ``linger_s``, and the answer that completes a group never waits at all. Calls
still running are fetched with ``collect`` under the same rule until none is left. So the
slowest answer of a phase (the one the deliberation waits for) comes back one Ray reply after it
arrives, even when other deliberations' calls share its batch: before groups, such an answer
lingered for them, and a deliberation whose last call finished while another's still ran paid
the whole ``linger_s`` (50 ms, a quarter of the 99th-percentile overhead budget).

Each call keeps its own outcome: one call failing fails no other. If the actor dies, Ray re-runs
a ``run_batch`` (``max_task_retries``), as it would a single call; calls a restarted actor no
longer knows (``collect`` after a crash) are sent again once, in a new batch (calls are
idempotent by their key), and fail with the actor's error after that.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TypeVar

from ray import ObjectRef
from ray.exceptions import RayError, RayTaskError

from agent_runtime.api import AgentTurnError
from agent_runtime.ray_backend import _refs

__all__ = [
    "BATCH_LINGER_S",
    "ActorBatches",
    "BatchingActor",
    "CallBatcher",
    "Outcome",
    "RemoteMethod",
]

log = logging.getLogger(__name__)

BATCH_LINGER_S = 0.05
"""How long a finished call may wait for its batch's others: nothing against model latency
(seconds), long enough for answers to one phase's parallel calls to come back together."""

_KEEP_S = 60.0
"""How long past its longest call an actor keeps a batch nobody collects (the caller died)."""


@dataclass(frozen=True)
class Outcome:
    """One call's fate, as the actor hands it back."""

    kind: str
    """"ok" (``value`` is the result), "error" (``value`` is the message), "pending" (still
    running: collect it later), or "lost" (the actor no longer knows the call: restarted)."""
    value: object = None


R = TypeVar("R")


class RemoteMethod(Protocol[R]):
    """An actor method as a handle shows it: ``remote(...)`` starts the call."""

    def remote(self, *args: object) -> ObjectRef[R]: ...


class BatchingActor(Protocol):
    """What ``CallBatcher`` needs of an actor handle (a Ray ``ActorHandle`` of an actor that
    holds an ``ActorBatches``): its ``run_batch`` and ``collect``, plus the methods the calls
    name, reached by name (``getattr``)."""

    @property
    def run_batch(self) -> RemoteMethod[list[Outcome]]: ...

    @property
    def collect(self) -> RemoteMethod[list[Outcome]]: ...


class ActorBatches:
    """The actor's side: running batches by id. Loop affinity: the actor's event loop.

    Args:
        methods: the calls a batch may make, by name (e.g. ``run_turn`` → the member's method).
    """

    def __init__(self, methods: dict[str, Callable[[Any], Awaitable[object]]]) -> None:
        # Any: each method takes its own input type, and the argument arrives untyped from Ray.
        self._methods = methods
        self._batches: dict[str, dict[int, asyncio.Task[object]]] = {}
        self._groups: dict[str, dict[int, str]] = {}

    @property
    def open_batches(self) -> int:
        return len(self._batches)

    async def run(
        self,
        batch_id: str,
        calls: Sequence[tuple[str, object, str]],
        linger_s: float,
        keep_s: float,
    ) -> list[Outcome]:
        """Start every call (method, argument, group), then answer as ``collect`` does. A batch
        Ray re-sends after a crash finds nothing here and simply starts again."""
        tasks: dict[int, asyncio.Task[object]] = {}
        for i, (method, arg, _) in enumerate(calls):
            fn = self._methods.get(method)
            if fn is None:
                tasks[i] = asyncio.ensure_future(_refuse(method))
            else:
                tasks[i] = asyncio.ensure_future(fn(arg))
        self._batches[batch_id] = tasks
        self._groups[batch_id] = {i: group for i, (_, _, group) in enumerate(calls)}
        # Nobody may collect (the caller died): drop the batch once its calls are long over.
        loop = asyncio.get_running_loop()
        loop.call_later(keep_s + _KEEP_S, self._forget, batch_id)
        return await self.collect(batch_id, list(tasks), linger_s)

    def _forget(self, batch_id: str) -> None:
        self._batches.pop(batch_id, None)
        self._groups.pop(batch_id, None)

    async def collect(
        self, batch_id: str, indexes: Sequence[int], linger_s: float
    ) -> list[Outcome]:
        """The outcomes of ``indexes``: once all are done, or ``linger_s`` after the first is,
        or once one of them completes its group (among ``indexes``)."""
        batch = self._batches.get(batch_id, {})
        groups = self._groups.get(batch_id, {})
        tasks = {i: batch[i] for i in indexes if i in batch}
        await _settle(tasks, groups, linger_s)
        out: list[Outcome] = []
        for i in indexes:
            task = batch.get(i)
            if task is None:
                out.append(Outcome("lost"))
            elif not task.done():
                out.append(Outcome("pending"))
            else:
                del batch[i]
                out.append(_outcome(task))
        if not batch:
            self._forget(batch_id)
        return out


async def _settle(
    tasks: dict[int, asyncio.Task[object]], groups: dict[int, str], linger_s: float
) -> None:
    """Wait until every task is done, or ``linger_s`` after the first is, or until a task
    finishes whose group has nothing left running: its caller waits for nothing else."""
    if not tasks:
        return
    loop = asyncio.get_running_loop()
    group_of = {t: groups.get(i, "") for i, t in tasks.items()}
    pending: set[asyncio.Task[object]] = set(tasks.values())
    deadline: float | None = None
    while pending:
        timeout = None if deadline is None else deadline - loop.time()
        if timeout is not None and timeout <= 0:
            return
        done, pending = await asyncio.wait(
            pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if not done:
            return  # lingered long enough
        if deadline is None:
            deadline = loop.time() + linger_s
        finished = {group_of[t] for t in done} - {""}
        if finished - {group_of[t] for t in pending}:
            return  # a group is complete: its caller is waiting for exactly these answers


async def _refuse(method: str) -> NoReturn:
    raise AgentTurnError(f"actor has no batch method {method!r}")


def _outcome(task: asyncio.Task[object]) -> Outcome:
    if task.cancelled():
        return Outcome("error", "call cancelled on the actor")
    e = task.exception()
    if e is None:
        return Outcome("ok", task.result())
    # The message only: as a single call's error reaches the caller (RayTaskError's cause).
    return Outcome("error", str(e) if isinstance(e, AgentTurnError) else f"{type(e).__name__}: {e}")


@dataclass(eq=False)
class _Call:
    method: str
    arg: object
    key: str
    timeout_s: float
    future: asyncio.Future[object]
    group: str = ""


class CallBatcher:
    """The caller's side. Loop affinity: the loop that submits (one per runtime).

    Args:
        linger_s: see ``BATCH_LINGER_S``.
    """

    def __init__(self, linger_s: float = BATCH_LINGER_S) -> None:
        self._linger_s = linger_s
        self._pending: dict[int, list[_Call]] = {}
        self._actors: dict[int, BatchingActor] = {}
        self._flushing = False
        self._sends: set[asyncio.Task[None]] = set()
        self.ray_calls = 0
        """Ray calls sent (batches, lone calls and collects): for tests and benchmarks."""

    def submit(
        self,
        actor: BatchingActor,
        method: str,
        arg: object,
        *,
        key: str,
        timeout_s: float,
        group: str = "",
    ) -> asyncio.Future[object]:
        """Queue one call to ``actor``; returns a future of its result (AgentTurnError on
        failure). Cancelling the future abandons the call (a lone call is cancelled in Ray).
        ``group``: the calls the caller waits for together (e.g. a deliberation's id); the one
        that completes its group comes back at once (see ``ActorBatches``)."""
        loop = asyncio.get_running_loop()
        call = _Call(method, arg, key, timeout_s, loop.create_future(), group)
        handle_key = id(actor)  # a runtime's pools hold one handle object per actor
        self._actors[handle_key] = actor
        self._pending.setdefault(handle_key, []).append(call)
        if not self._flushing:
            self._flushing = True
            loop.call_soon(self._flush)
        return call.future

    def _flush(self) -> None:
        """Send what this loop turn gathered: the Ray calls leave now, from this callback (a
        task would start them one loop turn later); tasks only wait for their answers."""
        self._flushing = False
        pending, self._pending = self._pending, {}
        for handle_key, calls in pending.items():
            actor = self._actors.pop(handle_key)
            try:
                if len(calls) == 1:
                    sent = self._send_one(actor, calls[0], self._remote_one(actor, calls[0]))
                else:
                    batch_id = uuid.uuid4().hex
                    ref = self._remote_batch(actor, batch_id, calls)
                    sent = self._send_batch(actor, calls, retry_lost=True, sent=(batch_id, ref))
            except Exception as e:  # Ray refused the call outright: every caller hears why
                self._failed(calls, e)
                continue
            task = asyncio.ensure_future(self._answered(sent, calls))
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)

    async def _answered(self, sent: Awaitable[None], calls: list[_Call]) -> None:
        try:
            await sent
        except Exception as e:  # a bug here must still answer every caller
            self._failed(calls, e)

    def _failed(self, calls: list[_Call], e: Exception) -> None:
        """Fail ``calls`` with ``e``, unless ``e`` says that Ray itself is gone: that is no
        agent's failure, and is not answered as one (it would be recorded as ``AgentFailed``, and
        fail deliberations that a restart resumes). The node stops on it (the runtime's
        connection watch) and its restart asks again; a caller that waits alone gives up at its
        own deadline (``RayAgentRuntime._call``)."""
        if _refs.connection_lost(e):
            log.warning(
                "%d agent call(s) left unanswered: the connection to Ray is lost (%s: %s)",
                len(calls),
                type(e).__name__,
                e,
            )
            return
        for c in calls:
            _fail(c, AgentTurnError(f"{c.key}: {type(e).__name__}: {e}"))

    def _remote_one(self, actor: BatchingActor, call: _Call) -> ObjectRef[object]:
        self.ray_calls += 1
        ref: ObjectRef[object] = getattr(actor, call.method).remote(call.arg)
        return ref

    def _remote_batch(
        self, actor: BatchingActor, batch_id: str, calls: list[_Call]
    ) -> ObjectRef[list[Outcome]]:
        self.ray_calls += 1
        items = [(c.method, c.arg, c.group) for c in calls]
        keep_s = max(c.timeout_s for c in calls)
        return actor.run_batch.remote(batch_id, items, self._linger_s, keep_s)

    async def _send_one(self, actor: BatchingActor, call: _Call, ref: ObjectRef[object]) -> None:
        call.future.add_done_callback(lambda f: _refs.cancel(ref) if f.cancelled() else None)
        try:
            result = await _refs.result(ref)
        except RayTaskError as e:
            _fail(call, AgentTurnError(_cause_message(e)))
        except RayError as e:
            _fail(call, AgentTurnError(f"{call.key}: actor failure ({type(e).__name__}): {e}"))
        else:
            if not call.future.done():
                call.future.set_result(result)

    async def _send_batch(
        self,
        actor: BatchingActor,
        calls: list[_Call],
        *,
        retry_lost: bool,
        sent: tuple[str, ObjectRef[list[Outcome]]] | None = None,
    ) -> None:
        """Run ``calls`` as one batch, collecting those still running until none is left.
        ``sent``: (batch id, reference) of its ``run_batch`` when already sent."""
        batch_id, ref = sent or (uuid.uuid4().hex, None)
        remaining = list(range(len(calls)))
        lost: list[_Call] = []
        started = ref is not None
        while remaining:
            try:
                if ref is None and not started:
                    ref = self._remote_batch(actor, batch_id, calls)
                    started = True
                elif ref is None:
                    self.ray_calls += 1
                    ref = actor.collect.remote(batch_id, remaining, self._linger_s)
                outcomes: list[Outcome] = await _refs.result(ref)
                ref = None
            except RayTaskError as e:
                for i in remaining:
                    _fail(calls[i], AgentTurnError(_cause_message(e)))
                return
            except RayError as e:
                for i in remaining:
                    c = calls[i]
                    _fail(c, AgentTurnError(f"{c.key}: actor failure ({type(e).__name__}): {e}"))
                return
            still: list[int] = []
            for i, o in zip(remaining, outcomes, strict=True):
                c = calls[i]
                if o.kind == "ok":
                    if not c.future.done():
                        c.future.set_result(o.value)
                elif o.kind == "error":
                    _fail(c, AgentTurnError(str(o.value)))
                elif o.kind == "lost":
                    lost.append(c)
                elif not c.future.done():  # pending, and somebody still waits for it
                    still.append(i)
            remaining = still
        if lost:
            if retry_lost:  # the actor restarted under these calls: once more, as Ray would
                await self._send_batch(actor, lost, retry_lost=False)
            else:
                for c in lost:
                    _fail(c, AgentTurnError(f"{c.key}: the actor restarted twice during the call"))


def _fail(call: _Call, error: BaseException) -> None:
    if not call.future.done():
        call.future.set_exception(error)


def _cause_message(e: RayTaskError) -> str:
    """The actor-side error's own message, without Ray's traceback wrapper."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException):
        return str(cause)
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
