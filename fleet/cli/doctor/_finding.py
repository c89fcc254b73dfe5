"""What a check reports, what it reads, and the two helpers every check uses."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from fleet.client import ClientSecurity
    from fleet.config import Settings

T = TypeVar("T")


class Status(str, Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Finding:
    name: str
    """The part checked: nats, model, sandbox, ray, graph, valkey, api."""
    status: Status
    checked: str
    """What was looked at: a URL (password masked), a path, a mode."""
    detail: str
    """What was found."""
    fix: str = ""
    """For warn and fail: the one thing to change (a command or a setting)."""


@dataclass(frozen=True)
class Setup:
    """Everything the checks read, gathered once by the command."""

    settings: Settings
    data_dir: Path
    timeout_s: float
    run: Mapping[str, Any] = field(default_factory=dict)
    """What a running ``fleet up`` on ``data_dir`` wrote (run.json); empty when none runs."""
    stale_pid: int | None = None
    """The pid of a run.json whose process is gone (a node killed without cleaning up)."""
    api_address: str | None = None
    """A node's API to ask (``--address``, FLEET_ADDRESS or run.json); None: none expected."""
    security: ClientSecurity | None = None


Check = Callable[[Setup], Awaitable[Finding]]


async def in_thread(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` on a daemon thread, waited for at most ``timeout_s`` (TimeoutError)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result, error = fn(), None
        except BaseException as e:
            result, error = None, e
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is gone: nobody waits any more
            pass

    threading.Thread(target=work, name="fleet-doctor", daemon=True).start()
    return await asyncio.wait_for(done, timeout_s)


def explain(e: BaseException) -> str:
    text = " ".join(str(e).split()) or "no message"
    return f"{type(e).__name__}: {text}"
