"""Drives one projection from the application's log, in a daemon thread, in batches, fenced.

The runner claims the projection in its store (``projectors.fence``), reads the stored position,
subscribes to the application recorder after it, and applies what has arrived in batches: while
behind, up to ``batch_size`` events per atomic step (one graph transaction of ``UNWIND``s, one
Valkey script after one pipeline of reads); when live, whatever arrived while the previous step
committed (group commit: a few events at 500 events/s), so an event waits for at most the commit
in progress and its own, and a burst is absorbed in catch-up-sized steps. Once the backlog it
started with is applied, and when nothing has arrived for ``idle_s`` after a write, the runner
calls the projection's optional ``idle()`` (the graph may checkpoint its write-ahead log there,
so the engine need not stall a live commit to do it). Each batch carries the runner's fence and
the position it started from; the store refuses it when either changed. Batches are pipelined:
the runner's thread decodes (and a ``StagedProjection`` translates) the next batch while a
writer thread writes the one before, one write in flight at most; the position moves when a
write ends, and a write in flight ends before anything else touches the store. The runner keeps no
position of its own that matters: a restart (of the runner or the process) resumes from the
store, and the store ignores what it has already applied.

* Fenced out (another instance claimed the projection): the runner stops writing and stands by,
  re-claiming every sixth of a lease (the owner renews every third), and resumes from the stored
  position once it holds it: a crashed owner's work moves within a lease and a half-second.
* The stored position moved under it (store emptied or rebuilt): it resumes from the stored one.
* An error of a type in ``retry_on`` (a store that is down): logged, retried with back-off.
* Any other error stops the runner: logged, kept in ``error`` and re-raised (as the cause of
  ``ProjectionStoppedError``) by ``wait``. A projection that skipped an event would be silently
  wrong forever; one that stops is noticed and restarted after a fix.

Over 400 lines on purpose: the loop in ``_follow`` (claim, take, stage, write, renew, idle) is
one state machine, read and changed as one; its read side (``_feed``) and write side
(``_writes``) are modules of their own.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from types import TracebackType
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import Notification

from projectors._feed import Feed
from projectors._writes import Staged, Writer
from projectors.errors import PositionMovedError, ProjectionFencedError, ProjectionStoppedError
from projectors.fence import DEFAULT_LEASE_MS, Fence
from projectors.projection import Projection, StagedProjection

__all__ = ["DEFAULT_BATCH_SIZE", "ProjectorRunner", "RunnerState"]

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500
DEFAULT_IDLE_S = 1.0
_MAX_BACKOFF_S = 5.0


class RunnerState:
    STARTING = "starting"
    ACTIVE = "active"
    STANDBY = "standby"
    STOPPED = "stopped"
    FAILED = "failed"


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProjectorRunner:
    """Runs ``projection`` over ``app``'s events in a daemon thread.

    Thread-safety: ``start``, ``close``, ``wait``, ``position``, ``state`` and ``error`` may be
    called from any thread. The projection is called from the runner's thread and its writer
    thread, never from both at once except a ``StagedProjection``'s ``stage`` (pure) beside
    a write.

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
        app: Application[UUID],
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
        self._staged = projection if isinstance(projection, StagedProjection) else None
        """The projection when it stages its batches. Asked once: a runtime-checkable Protocol's
        ``isinstance`` looks up each of its members (25 µs), and live batches hold an event or
        two: through a burst of submits, four runners asked it ~600 times a second, interpreter
        lock time that a one-process node's event loop waits for."""
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
        self._feed: Feed | None = None
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
        """Read the stored position and start. Idempotent.

        A store that is down (an error of a ``retry_on`` type) does not stop the start: the
        runner's thread waits for it (claiming with back-off) and catches up once it is back, as
        it does when the store goes away later; any other error is raised here.
        """
        with self._cond:
            if self._thread is not None:
                return
            try:
                self._position = self._projection.position()
            except self._retry_on as e:
                log.warning("Projection %s: store unavailable at start (%r)", self.name, e)
            self._thread = threading.Thread(
                target=self._run, name=f"projector-{self.name}", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """End the subscription and join the thread. Idempotent; safe before ``start``."""
        with self._cond:
            self._stopped = True
            feed, thread = self._feed, self._thread
            self._cond.notify_all()
        if feed is not None:
            feed.close(join=False)  # wakes the runner's thread at once
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
            ProjectionStoppedError: the runner stopped (by ``close`` or an error, the cause) first.
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
            self._sleep(self._lease_ms / 6000)
        return None

    def _follow(self, fence: Fence | None) -> None:
        """Apply from the stored position until stopped; raises to re-claim or resume."""
        base = self._projection.position()
        # The backlog this subscription starts with: once applied, the catch-up is over and the
        # projection's housekeeping runs once, before live traffic, even while more is queued
        # (at 500 events/s the queue is seldom empty after a commit). A burst later on is not a
        # catch-up: housekeeping then (a graph checkpoint, seconds on a large graph with a full
        # log) would stall the stream it fell behind on, and it fell further behind each time.
        backlog = self._app.recorder.max_notification_id() or 0
        if backlog <= base:
            backlog = 0  # nothing to catch up on
        with self._cond:
            self._position = base
            self._cond.notify_all()
        feed = Feed(self._app.recorder.subscribe(gt=base or None), name=f"feed-{self.name}")
        with self._cond:
            self._feed = feed
            stopped = self._stopped
        if stopped:
            feed.close(join=False)
        renew_s = self._lease_ms / 3000
        renew_at = time.monotonic() + renew_s
        dirty = True  # the store may hold a previous run's un-checkpointed writes
        writer = Writer(f"write-{self.name}")  # a full batch written while the next is staged
        try:
            while not self._is_stopped():
                if writer.busy:  # behind: stage what is queued, else finish the write
                    taken = feed.take(0.0, after=base, limit=self._batch_size)
                    if taken is None:
                        self._finish(writer)
                        continue
                else:
                    wait = max(0.0, renew_at - time.monotonic())
                    if dirty:
                        wait = min(wait, self._idle_s)
                    taken = feed.take(wait, after=base, limit=self._batch_size)
                if taken is None:  # quiet
                    if dirty:
                        self._idle()
                        dirty = False
                    if time.monotonic() >= renew_at:
                        self._renew(fence)
                        renew_at = time.monotonic() + renew_s
                    continue
                if taken.notifications:
                    staged = self._stage(taken.notifications, base, fence)
                    self._finish(writer)
                    if len(taken.notifications) >= self._batch_size:  # behind: pipelined
                        writer.submit(staged)
                    else:  # live: what arrives while this commits goes in the next one
                        self._published(staged, staged.write())
                    base = staged.last
                    renew_at = time.monotonic() + renew_s  # a fenced write renews the lease
                    dirty = True
                    if backlog and base >= backlog:  # the catch-up is applied: before live
                        self._finish(writer)
                        self._idle()
                        dirty = False
                        backlog = 0
                if taken.ended:
                    self._finish(writer)
                    if taken.error is not None:
                        raise taken.error
                    return
        finally:
            writer.close()  # leaving on an error: the store is ours once the write has ended
            feed.close()
            with self._cond:
                self._feed = None

    def _stage(self, batch: Sequence[Notification], base: int, fence: Fence | None) -> Staged:
        """The batch's work that needs no store, done on the runner's thread while the batch
        before it is written: decoding, and the projection's own (``StagedProjection``)."""
        mapper = self._app.mapper
        items = [(mapper.to_domain_event(n), n.id) for n in batch]
        at = getattr(items[-1][0], "timestamp", None)
        projection, staged = self._projection, self._staged
        if staged is not None:
            write = staged.stage(items, base=base, fence=fence)
        else:

            def write() -> int:
                return projection.apply_batch(items, base=base, fence=fence)

        return Staged(write, batch[0].id, batch[-1].id, at if isinstance(at, datetime) else None)

    def _finish(self, writer: Writer) -> None:
        """Wait for the write in flight, if any, raising its error, and publish its position."""
        done = writer.finish()
        if done is not None:
            self._published(*done)

    def _published(self, staged: Staged, applied: int) -> None:
        with self._cond:
            self._position = staged.last
            self._applied += applied
            if staged.at is not None:
                self._last_time = staged.at
            self._cond.notify_all()
        if self._on_batch is not None:
            self._on_batch(staged.first, staged.last, applied)

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
        self.close()
