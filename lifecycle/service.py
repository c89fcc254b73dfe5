"""``BackgroundService``: ``async with`` starts ``run()`` as a task; leaving cancels it."""

from __future__ import annotations

import abc
import asyncio
from typing import Self

from lifecycle.closing import AsyncClosing

__all__ = ["BackgroundService"]


class BackgroundService(AsyncClosing):
    """A part that works in the background of its loop until shut down.

    Subclasses write ``run()`` and, when they hold more than the runner task (connections,
    in-flight calls, claims), extend ``close()`` and call ``stop_runner()`` from it.
    ``prepare()`` runs before the runner starts, on entering (a failure there raises from
    ``async with`` instead of ending the runner later).

    Loop affinity: the loop that entered it.
    """

    _runner: asyncio.Task[None] | None = None

    @property
    def task_name(self) -> str:
        """The runner task's name (in logs and in ``fleet up``'s report of a part that ended)."""
        return type(self).__name__

    @abc.abstractmethod
    async def run(self) -> None:
        """Work until cancelled."""

    async def prepare(self) -> None:  # a hook: most services need nothing here
        """Whatever must be in place before ``run`` starts (nothing by default)."""

    def start(self) -> None:
        """Start ``run()`` as a task on the running loop. Idempotent."""
        if self._runner is None:
            self._runner = asyncio.create_task(self.run(), name=self.task_name)

    def background_tasks(self) -> list[asyncio.Task[None]]:
        """What must keep running for this service to work: the runner."""
        return [self._runner] if self._runner is not None else []

    async def stop_runner(self) -> None:
        """Cancel the runner and wait for it. Its own failure is not re-raised here: a runner
        that ended on its own was reported through ``background_tasks``, and stopping must
        still release what the service holds."""
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)

    async def close(self) -> None:
        """Stop. Idempotent. Subclasses that hold more extend it."""
        await self.stop_runner()

    async def __aenter__(self) -> Self:
        await self.prepare()
        self.start()
        return self
