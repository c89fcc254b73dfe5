"""Drives one projection from the application's log, in a daemon thread, in batches, fenced.

The runner claims the projection in its store (``projectors.fence``), reads the stored position,
subscribes to the application recorder after it, and applies what has arrived in batches: while
behind, up to ``batch_size`` events per atomic step (one graph transaction of ``UNWIND``s, one
Valkey script after one pipeline of reads); when live, whatever is queued, usually one event, so
lag stays low. When a catch-up drains, and when nothing has arrived for ``idle_s`` after a write,
the runner calls the projection's optional ``idle()`` (the graph checkpoints its write-ahead log
there, so the engine need not stall a live commit to do it). Each batch carries the runner's
fence and the position it started from; the store refuses it when either changed. The runner
keeps no position of its own that matters: a restart (of the runner or the process) resumes
from the store, and the store ignores what it has already applied.

* Fenced out (another instance claimed the projection): the runner stops writing and stands by,
  re-claiming every third of a lease, and resumes from the stored position once it holds it.
* The stored position moved under it (store emptied or rebuilt): it resumes from the stored one.
* An error of a type in ``retry_on`` (a store that is down): logged, retried with back-off.
* Any other error stops the runner: logged, kept in ``error`` and re-raised (as the cause of
  ``ProjectionStoppedError``) by ``wait``. A projection that skipped an event would be silently
  wrong forever; one that stops is noticed and restarted after a fix.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import Notification, Subscription

from projectors.errors import PositionMovedError, ProjectionFencedError, ProjectionStoppedError
from projectors.fence import DEFAULT_LEASE_MS, Fence
from projectors.projection import Projection

__all__ = ["DEFAULT_BATCH_SIZE", "ProjectorRunner", "RunnerState"]

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500
DEFAULT_IDLE_S = 1.0
_QUEUE_BOUND = 20_000  # notifications read ahead of the applier
_MAX_BACKOFF_S = 5.0


class RunnerState:
    STARTING = "starting"
    ACTIVE = "active"
    STANDBY = "standby"
    STOPPED = "stopped"
    FAILED = "failed"


class _End:
    """Queued by the feeder when the subscription ends (``error`` set when it failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProjectorRunner:
    """Runs ``projection`` over ``app``'s events in a daemon thread.

    Thread-safety: ``start``, ``stop``, ``wait``, ``position``, ``state`` and ``error`` may be
    called from any thread; only the runner's own thread calls the projection's writes.

    Args:
        app: the application whose recorder and mapper to read (FleetApplication in Fleet).
        projection: what to apply events to; its store holds the position and the fence.
        batch_size: the most events applied in one atomic step.
        owner: this instance's owner token (unique per process by default).
        lease_ms: the claim's lease; a standby takes over after the owner is silent this long.
        fenced: claim the projection and fence writes (False: unfenced, a single-writer tool).
        retry_on: error types that mean "the store is down": retried instead of stopping.
        on_batch: called after each batch with (first position, last position, applied count);
            the benchmark measures lag with it.
        idle_s: quiet time after a write before the projection's ``idle()`` (if it has one).
    """

    def __init__(
        self,
        app: Application[Any],
        projection: Projection,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        owner: str | None = None,
        lease_ms: int = DEFAULT_LEASE_MS,
        fenced: bool = True,
        retry_on: tuple[type[BaseException], ...] = (),
        on_batch: Callable[[int, int, int], None] | None = None,
        idle_s: float = DEFAULT_IDLE_S,
    ) -> None:
        self._app = app
        self._projection = projection
        self._batch_size = max(1, batch_size)
        self.owner = owner or default_owner()
        self._lease_ms = lease_ms
        self._fenced = fenced
        self._retry_on = retry_on
        self._on_batch = on_batch
        self._idle_s = idle_s
        self._cond = threading.Condition()
        self._position = 0
        self._applied = 0
        self._last_time: datetime | None = None
        self._state = RunnerState.STARTING
        self._error: BaseException | None = None
        self._subscription: Subscription[Any] | None = None
        self._queue: queue.Queue[Notification | _End] | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def name(self) -> str:
        return self._projection.name

    def fresh(self) -> ProjectorRunner:
        """A new, unstarted runner of the same projection with the same options and owner."""
        return ProjectorRunner(
            self._app,
            self._projection,
            batch_size=self._batch_size,
            owner=self.owner,
            lease_ms=self._lease_ms,
            fenced=self._fenced,
            retry_on=self._retry_on,
            on_batch=self._on_batch,
            idle_s=self._idle_s,
        )

    @property
    def projection(self) -> Projection:
        return self._projection

    @property
    def error(self) -> BaseException | None:
        """The error that stopped the runner, if one did."""
        with self._cond:
            return self._error

    @property
    def state(self) -> str:
        with self._cond:
            return self._state

    @property
    def applied(self) -> int:
        """Events this runner applied (its own writes only, not those of another instance)."""
        with self._cond:
            return self._applied

    @property
    def last_event_time(self) -> datetime | None:
        """Recording time of the last event handled (for lag in seconds)."""
        with self._cond:
            return self._last_time

    def position(self) -> int:
        """The last position handled (applied, or seen and ignored) by this runner."""
        with self._cond:
            return self._position

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Read the stored position (raising if the store is down) and start. Idempotent."""
        with self._cond:
            if self._thread is not None:
                return
            self._position = self._projection.position()
            self._thread = threading.Thread(
                target=self._run, name=f"projector-{self.name}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the subscription and join the thread. Idempotent; safe before ``start``."""
        with self._cond:
            self._stopped = True
            subscription, thread, q = self._subscription, self._thread, self._queue
            self._cond.notify_all()
        if subscription is not None:
            subscription.stop()
        if q is not None:
            with contextlib.suppress(queue.Full):
                q.put_nowait(_End())  # wakes the applier at once (the feeder's _End may queue up)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if self._fenced and not thread.is_alive():
                try:  # a clean stop hands over at once; a crash leaves the lease to expire
                    self._projection.release(self.owner)
                except Exception as e:
                    log.warning("Projection %s: could not release its lease (%r)", self.name, e)

    def wait(self, position: int, timeout: float = 10.0) -> None:
        """Block until ``position`` is handled.

        Raises:
            ProjectionStoppedError: the runner stopped (by ``stop`` or an error, the cause) first.
            TimeoutError: ``timeout`` seconds passed first.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._position < position:
                if self._error is not None:
                    msg = f"Projection {self.name} stopped at {self._position}: {self._error!r}"
                    raise ProjectionStoppedError(msg) from self._error
                if self._stopped:
                    msg = f"Projection {self.name} was stopped at {self._position} (< {position})"
                    raise ProjectionStoppedError(msg)
                left = deadline - time.monotonic()
                if left <= 0:
                    msg = f"Projection {self.name} at {self._position}, not {position}, after"
                    raise TimeoutError(f"{msg} {timeout:.1f} s ({self._state})")
                self._cond.wait(left)

    # ------------------------------------------------------------------ the runner's thread

    def _run(self) -> None:
        backoff = 0.05
        try:
            while not self._is_stopped():
                fence = self._acquire()
                if self._is_stopped():
                    break
                self._set_state(RunnerState.ACTIVE)
                try:
                    self._follow(fence)
                    backoff = 0.05
                except ProjectionFencedError as e:
                    log.warning("Projection %s: fenced out, standing by (%s)", self.name, e)
                    self._set_state(RunnerState.STANDBY)
                except PositionMovedError as e:
                    log.warning("Projection %s: %s; resuming from %d", self.name, e, e.stored)
                except self._retry_on as e:
                    log.warning("Projection %s: store unavailable (%r); retrying", self.name, e)
                    self._sleep(backoff)
                    backoff = min(backoff * 2, _MAX_BACKOFF_S)
        except BaseException as e:
            log.exception("Projection %s failed after position %s", self.name, self._position)
            with self._cond:
                self._error = e
                self._state = RunnerState.FAILED
        finally:
            with self._cond:
                self._stopped = True
                if self._state != RunnerState.FAILED:
                    self._state = RunnerState.STOPPED
                self._cond.notify_all()

    def _acquire(self) -> Fence | None:
        """Claim the projection, standing by while another instance holds it."""
        if not self._fenced:
            return None
        while not self._is_stopped():
            try:
                fence = self._projection.claim(self.owner, self._lease_ms)
            except self._retry_on as e:
                log.warning("Projection %s: cannot claim (%r); retrying", self.name, e)
                fence = None
            if fence is not None:
                return fence
            self._set_state(RunnerState.STANDBY)
            self._sleep(self._lease_ms / 3000)
        return None

    def _follow(self, fence: Fence | None) -> None:
        """Apply from the stored position until stopped; raises to re-claim or resume."""
        base = self._projection.position()
        with self._cond:
            self._position = base
            self._cond.notify_all()
        q: queue.Queue[Notification | _End] = queue.Queue(maxsize=_QUEUE_BOUND)
        subscription = self._app.recorder.subscribe(gt=base or None)
        with self._cond:
            self._subscription, self._queue = subscription, q
            stopped = self._stopped
        if stopped:
            subscription.stop()
        feeder = threading.Thread(
            target=self._feed, args=(subscription, q), name=f"feed-{self.name}", daemon=True
        )
        feeder.start()
        renew_s = self._lease_ms / 3000
        renew_at = time.monotonic() + renew_s
        dirty = True  # the store may hold a previous run's un-checkpointed writes
        behind = False  # applied a full batch since the last idle()
        try:
            while not self._is_stopped():
                now = time.monotonic()
                wait = max(0.0, renew_at - now)
                if dirty:
                    wait = min(wait, self._idle_s)
                try:
                    first = q.get(timeout=wait)
                except queue.Empty:
                    if dirty:
                        self._idle()
                        dirty = behind = False
                    if time.monotonic() >= renew_at:
                        self._renew(fence)
                        renew_at = time.monotonic() + renew_s
                    continue
                batch, end = self._drain(first, q)
                if batch:
                    base = self._apply(batch, base, fence)
                    renew_at = time.monotonic() + renew_s  # a fenced write renewed the lease
                    dirty = True
                    behind = behind or len(batch) >= self._batch_size
                    if behind and q.empty():  # a catch-up drained: live from here on
                        self._idle()
                        dirty = behind = False
                if end is not None:
                    if end.error is not None:
                        raise end.error
                    return
        finally:
            subscription.stop()
            with self._cond:
                self._subscription, self._queue = None, None
            while feeder.is_alive():  # unblock a feeder waiting on a full queue
                _discard_one(q)
                feeder.join(0.05)

    def _drain(
        self, first: Notification | _End, q: queue.Queue[Notification | _End]
    ) -> tuple[list[Notification], _End | None]:
        if isinstance(first, _End):
            return [], first
        batch = [first]
        while len(batch) < self._batch_size:
            try:
                item = q.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _End):
                return batch, item
            batch.append(item)
        return batch, None

    def _apply(self, batch: Sequence[Notification], base: int, fence: Fence | None) -> int:
        mapper = self._app.mapper
        items = [(mapper.to_domain_event(n), n.id) for n in batch]
        applied = self._projection.apply_batch(items, base=base, fence=fence)
        last = batch[-1].id
        at = getattr(items[-1][0], "timestamp", None)
        with self._cond:
            self._position = last
            self._applied += applied
            if isinstance(at, datetime):
                self._last_time = at
            self._cond.notify_all()
        if self._on_batch is not None:
            self._on_batch(batch[0].id, last, applied)
        return last

    def _idle(self) -> None:
        idle = getattr(self._projection, "idle", None)
        if idle is not None:
            idle()

    def _renew(self, fence: Fence | None) -> None:
        if fence is None:
            return
        renewed = self._projection.claim(self.owner, self._lease_ms)
        if renewed is None or renewed.epoch != fence.epoch:
            msg = f"lease of epoch {fence.epoch} lost while idle"
            raise ProjectionFencedError(msg)

    def _feed(self, subscription: Subscription[Any], q: queue.Queue[Notification | _End]) -> None:
        try:
            with subscription:
                for notification in subscription:
                    while True:
                        if self._is_stopped():
                            return
                        try:
                            q.put(notification, timeout=0.2)
                            break
                        except queue.Full:
                            continue
            end = _End()
        except BaseException as e:
            end = _End(e)
        while not self._is_stopped():
            try:
                q.put(end, timeout=0.2)
                return
            except queue.Full:
                continue

    def _is_stopped(self) -> bool:
        with self._cond:
            return self._stopped

    def _set_state(self, state: str) -> None:
        with self._cond:
            self._state = state
            self._cond.notify_all()

    def _sleep(self, seconds: float) -> None:
        with self._cond:
            if not self._stopped:
                self._cond.wait(seconds)

    def __enter__(self) -> ProjectorRunner:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _discard_one(q: queue.Queue[Any]) -> None:
    """Take one item off ``q`` if there is one (frees a producer blocked on a full queue)."""
    try:
        q.get_nowait()
    except queue.Empty:
        pass
