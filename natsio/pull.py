"""Reading a JetStream pull consumer in a loop that only cancellation ends.

Every long-lived reader of a pull consumer (the NATS agent backend's results listener and
workers, the dispatchers' work queue and the plan consumer) needs the same loop, and nats-py's
``fetch`` has three outcomes that loop must survive, one of them undocumented:

* ``TimeoutError`` when nothing arrived within the timeout: poll again;
* an **empty list** when the server's 408 (the pull request expired) beats the client's own timer
  by a hair. Measured with nats-py 2.16 on nats-server 2.15: about one idle poll in twelve, more
  on a loaded machine. A loop that reads ``msgs[-1]`` dies there with an IndexError, silently if
  it is a background task; every answer after that then waits out its whole call timeout (the
  NATS backend's "stall after round 0");
* a ``nats.errors.Error`` while reconnecting or while the consumer's leader moves: back off and
  poll again, the durable consumer is still there.

A batch can also come late rather than never: after handing over the messages there are, the
server is meant to end a pull request early (nats-py asks with ``no_wait``), and ``fetch`` waits
for more until it does. While in-progress acks reached the consumer (a work queue's owners
heart-beating their claims), nats-server 2.15 kept the request open instead, so ``fetch``
returned the first message only with the next one: in the dispatch benchmark, every other
deliberation of a burst started one arrival gap (85 ms) late. A reader whose every message
somebody is waiting for (the work queue's claims) fetches with ``batch=1``: ``fetch`` returns
the moment one message is there.

One more hazard is Python's, not the server's: on 3.11 a cancellation that arrives as ``fetch``
answers (or times out) is lost inside it, so the loop checks after every fetch that its task is
not being cancelled (``_raise_if_cancelling``).

``pull_batches`` yields only non-empty batches and ends only when cancelled (or when the
subscription's owner closes the connection, which raises ``ConnectionClosedError`` forever:
that ends the loop too, rather than spinning).

Loop affinity: the caller's loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError

__all__ = ["PullSubscription", "pull_batches"]

log = logging.getLogger(__name__)


class PullSubscription(Protocol):
    """What ``pull_batches`` needs of nats-py's ``JetStreamContext.PullSubscription``."""

    async def fetch(
        self, batch: int = 1, timeout: float | None = 5, heartbeat: Any = None
    ) -> Any: ...


async def pull_batches(
    sub: PullSubscription,
    *,
    batch: int,
    timeout_s: float = 1.0,
    what: str = "pull consumer",
    max_backoff_s: float = 5.0,
) -> AsyncIterator[list[Msg]]:
    """Yield each non-empty batch fetched from ``sub``, forever.

    Args:
        sub: a bound pull subscription.
        batch: the most messages one fetch asks for.
        timeout_s: how long one fetch waits (also the longest a cancellation waits on a poll).
        what: names the consumer in the warnings logged on errors.
        max_backoff_s: the longest pause between polls while NATS keeps failing.

    Raises:
        ConnectionClosedError: the connection was closed (by its owner): nothing more can come.
    """
    backoff = min(0.1, max_backoff_s)
    while True:
        try:
            msgs = await sub.fetch(batch=batch, timeout=timeout_s)
        except TimeoutError:  # nats.errors.TimeoutError is one too
            _raise_if_cancelling()
            continue
        except ConnectionClosedError:
            raise
        except NatsError as e:
            log.warning("%s: fetch failed (%r); retrying in %.1f s", what, e, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max_backoff_s)
            continue
        _raise_if_cancelling()
        backoff = min(0.1, max_backoff_s)
        if msgs:
            yield list(msgs)


def _raise_if_cancelling() -> None:
    """Honour a cancellation that ``fetch`` swallowed.

    On Python 3.11, ``asyncio.wait_for`` (inside nats-py's ``fetch``) returns the result, or
    raises its own TimeoutError, when the cancellation arrives in the same loop step as the
    answer: the CancelledError is lost, yet the task stays marked as cancelling. The loop would
    then poll on, and whoever cancelled it waits forever (a node hung in ``stop()`` with
    ``dispatcher-claims`` or ``plan-approvals`` cancelling, about one start/stop in thirteen).
    3.12's ``wait_for`` no longer loses it; the check costs nothing there.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
