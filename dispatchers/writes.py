"""One deliberation's writes in flight, in the protocol's order: Started before any answer,
the answers before any review or score.

A driver (``driver``) owns one ``DeliberationWrites``: the Started write it sent ahead of the
first calls, and the answers it applied to its copy at once and stores in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from uuid import UUID

from aggregates import Deliberation, DuplicateProposalError
from application.ports import DeliberationStore

__all__ = ["DeliberationWrites", "retrieved"]

log = logging.getLogger("dispatchers.deliberations")  # one logger for the dispatcher's lines


class DeliberationWrites:
    """The writes of one deliberation that are still in flight, and their order.

    Loop affinity: the dispatcher's loop.
    """

    def __init__(self, store: DeliberationStore, d_id: UUID) -> None:
        self._store = store
        self._id = d_id
        self._starting: asyncio.Future[Deliberation] | None = None
        """The Started write, while the first calls are on their way (``DeliberationDriver``'s
        ``_start_and_drive``); None when the deliberation was started already."""
        self._answers: list[asyncio.Future[None]] = []
        """Answer writes still in flight (see ``answer``): reviews and scores are recorded
        only once these are stored."""

    def start(self, change: Callable[[Deliberation], Deliberation]) -> None:
        """Store Started (``change``) in the background; every later write waits for it."""
        self._starting = asyncio.ensure_future(self._store.update(self._id, change))

    def answers(self) -> list[asyncio.Future[None]]:
        """The answer writes in flight now."""
        return list(self._answers)

    def answer(
        self,
        d: Deliberation,
        change: Callable[[Deliberation], object],
        *,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        """Apply an agent's answer to the driver's copy ``d`` now; store it in the background,
        once the writes ``after`` (an earlier phase's answers) are done.

        The next phase (the peers' ratings) starts from the copy at once instead of after the
        write, and whatever is recorded next waits for the write first (``record``), so the
        stream holds the protocol's order. The copy's own events are dropped: only the store's
        count. If the store refuses the answer (another process recorded one first), the copy
        may differ from it until the driver reads the stored state again, before scoring.
        """
        with contextlib.suppress(Exception):  # the store decides; its error surfaces there
            change(d)
        d.collect_events()
        write = asyncio.ensure_future(self.record(change, after_answers=False, after=after))
        self._answers.append(write)

    async def answers_stored(self, *, raising: bool = True) -> None:
        """Wait until every answer write in flight is done; raise the first error.

        Waiting does not cancel them: a driver cancelled meanwhile leaves them to land."""
        writes = list(self._answers)
        if not writes:
            return
        await asyncio.wait(writes)
        self._answers = [w for w in self._answers if not w.done()]
        errors = [e for w in writes if not w.cancelled() and (e := w.exception()) is not None]
        if raising and errors:
            raise errors[0]

    async def record(
        self,
        change: Callable[[Deliberation], object],
        *,
        after_answers: bool = True,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        """Store ``change`` after Started, the writes ``after`` and (``after_answers``) every
        answer in flight. A duplicate answer (another process recorded one first) is logged."""
        await self.started()
        if after:  # their errors are reported by ``answers_stored``
            await asyncio.wait(after)
        if after_answers:
            await self.answers_stored()  # no review or score lands before the answers
        try:
            await self._store.update(self._id, change)
        except DuplicateProposalError:
            log.info("deliberation %s: duplicate answer ignored", self._id)

    async def started(self) -> None:
        """Wait until Started is stored, if its write is in flight: no answer lands before it
        (and its failure ends the driver). No suspension when it is stored already, so a write
        queued after this keeps its place behind the writes queued before it."""
        if self._starting is not None:
            await asyncio.shield(self._starting)

    def abandon(self) -> None:
        """The driver ended: a Started write still in flight is cancelled; the answers in
        flight are left to land, or to fail, on their own."""
        started, self._starting = self._starting, None
        if started is not None and not started.done():
            started.cancel()
        writes, self._answers = self._answers, []
        for write in writes:
            write.add_done_callback(retrieved)


def retrieved(write: asyncio.Future[None]) -> None:
    """A done-callback that takes an abandoned write's outcome, so that it is not reported as
    never retrieved (the driver that started it ended; the events say what landed)."""
    if not write.cancelled() and write.exception() is not None:
        log.warning("an answer write of an ended driver failed: %s", write.exception())
