"""Drives one projection from the application's log, in a daemon thread.

The runner reads the projection's position from the projection's own store, subscribes to the
application recorder after it (``recorder.subscribe(gt=position)``), maps each stored event to a
domain event with the application's mapper and hands it to the projection with its notification
id. It keeps no position of its own that matters: a restart (of the runner or the process) resumes
from the store, and the store ignores what it has already applied.

A projection that raises stops its runner: the error is logged, kept in ``error``, and re-raised
(as the cause of ``ProjectionStoppedError``) by ``wait``. A projection that skipped an event would
be silently wrong forever; one that stops is noticed and restarted after a fix.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import Subscription

from projectors.errors import ProjectionStoppedError
from projectors.projection import Projection

__all__ = ["ProjectorRunner"]

log = logging.getLogger(__name__)


class ProjectorRunner:
    """Runs ``projection`` over ``app``'s events in a daemon thread.

    Thread-safety: ``start``, ``stop``, ``wait``, ``position`` and ``error`` may be called from
    any thread; only the runner's own thread calls the projection.

    Args:
        app: the application whose recorder and mapper to read (FleetApplication in Fleet).
        projection: what to apply events to; its store holds the position.
    """

    def __init__(self, app: Application[Any], projection: Projection) -> None:
        self._app = app
        self._projection = projection
        self._cond = threading.Condition()
        self._position = 0
        self._error: BaseException | None = None
        self._subscription: Subscription[Any] | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def name(self) -> str:
        return self._projection.name

    @property
    def error(self) -> BaseException | None:
        """The error that stopped the runner, if one did."""
        with self._cond:
            return self._error

    def position(self) -> int:
        """The last position handled (applied, or seen and ignored) since the stored one."""
        with self._cond:
            return self._position

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Read the stored position and start following the log after it. Idempotent."""
        with self._cond:
            if self._thread is not None:
                return
            self._position = self._projection.position()
            # Created here, not in the thread, so a stop() that comes first can always end it.
            self._subscription = self._app.recorder.subscribe(gt=self._position or None)
            self._thread = threading.Thread(
                target=self._run, name=f"projector-{self.name}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the subscription and join the thread. Idempotent; safe before ``start``."""
        with self._cond:
            self._stopped = True
            subscription, thread = self._subscription, self._thread
            self._cond.notify_all()
        if subscription is not None:
            subscription.stop()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

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
                    raise TimeoutError(f"{msg} {timeout:.1f} s")
                self._cond.wait(left)

    def _run(self) -> None:
        subscription = self._subscription
        assert subscription is not None
        try:
            with subscription:
                for notification in subscription:
                    event = self._app.mapper.to_domain_event(notification)
                    self._projection.apply(event, notification.id)
                    with self._cond:
                        self._position = notification.id
                        self._cond.notify_all()
        except BaseException as e:
            log.exception("Projection %s failed after position %s", self.name, self._position)
            with self._cond:
                self._error = e
                self._stopped = True
                self._cond.notify_all()
        finally:
            with self._cond:
                self._stopped = True
                self._cond.notify_all()

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
