"""The start/stop pattern every long-running part of Fleet shares (Temporal's ``Worker`` style).

A ``BackgroundService`` has an ``async run()`` that works until cancelled, an idempotent
``async close()`` (the one verb every long-lived part of Fleet stops with), and ``async with``:
entering starts ``run()`` as a task of the caller's loop, leaving closes it.
``background_tasks()`` names the tasks that must keep running for the service to work, so the
composition root can notice one that ends on its own and stop the process (see
``fleet.bootstrap``). ``AsyncClosing`` is the ``async with`` half alone, for parts that only
hold resources until ``close()``. It imports nothing of Fleet's: every layer may use it.
"""

from __future__ import annotations

from lifecycle.closing import AsyncClosing
from lifecycle.service import BackgroundService

__all__ = ["AsyncClosing", "BackgroundService"]
