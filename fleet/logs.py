"""Structured logs: every line names the deliberation it is about, when there is one.

Where the id comes from, first match wins:

1. ``deliberation_context``, a contextvar. The gRPC servicer binds it per call (``bind``) and the
   store wrapper (``fleet.metrics.ObservedStore``) per write; ``asyncio.to_thread`` copies
   contextvars, so the event store's worker threads log with it too.
2. The running asyncio task's name when it is ``deliberation:<id>``: the dispatcher already names
   its per-deliberation driver task so (``dispatchers/driver.py``, ``DeliberationDriver.start``).
   That name is the documented hook, so dispatchers/ needs no import of fleet and no change.

``configure`` installs the filter and a formatter (``text`` or ``json``) on the root logger.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime

deliberation_context: ContextVar[str] = ContextVar("fleet_deliberation_id", default="")

_TASK_PREFIX = "deliberation:"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(deliberation_id)s]: %(message)s"


def current_deliberation() -> str:
    """The deliberation id this code runs for, or ""."""
    d = deliberation_context.get()
    if d:
        return d
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop in this thread
        return ""
    name = task.get_name() if task is not None else ""
    return name[len(_TASK_PREFIX) :] if name.startswith(_TASK_PREFIX) else ""


@contextlib.contextmanager
def bind(deliberation_id: str) -> Iterator[None]:
    """Log with ``deliberation_id`` inside the block."""
    token = deliberation_context.set(deliberation_id)
    try:
        yield
    finally:
        deliberation_context.reset(token)


class DeliberationFilter(logging.Filter):
    """Adds ``record.deliberation_id`` ("-" when none) to every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "deliberation_id", None):
            record.deliberation_id = current_deliberation() or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, deliberation_id, message (+ exc)."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "deliberation_id": getattr(record, "deliberation_id", "-"),
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


def configure(level: int = logging.INFO, fmt: str = "text") -> None:
    """Log to stderr at ``level`` with the deliberation id on every line (replaces handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(DeliberationFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
