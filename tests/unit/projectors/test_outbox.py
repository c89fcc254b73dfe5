"""The outbox projection over an in-memory stream: what each event leads to, and a crash between
two messages of one event (the case a SIGKILL hits only by chance) resumed exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from aggregates.story import Phase, Story
from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence
from projectors.outbox import (
    IntegrationEvent,
    Mark,
    OutboxProjection,
    Outgoing,
    PublishedMessage,
)
from tests.support.outbox import MESSAGES_PER_ROUND, one_of_each


class Crash(Exception):
    """The process died here."""


class InMemoryOutboxStream:
    """An ``OutboxStream`` in a list; ``crash_after`` publishes, it raises ``Crash`` instead."""

    def __init__(self) -> None:
        self.messages: list[tuple[IntegrationEvent, int, int, int]] = []
        self.crash_after: int | None = None

    def tail(self) -> Mark:
        if not self.messages:
            return Mark(0, 0)
        _, position, index, count = self.messages[-1]
        return Mark(len(self.messages), position, index, count)

    def publish_window(self, window: Sequence[Outgoing], *, expected: int) -> int:
        """As JetStream checks a window: each message lands only right behind the one before."""
        previous: IntegrationEvent | None = None
        for k, out in enumerate(window):
            last = self.messages[-1][0] if self.messages else None
            if expected + k != len(self.messages) or (k and last is not previous):
                raise PositionMovedError("moved", self.tail().position)
            if self.crash_after is not None and len(self.messages) >= self.crash_after:
                raise Crash
            self.messages.append((out.message, out.position, out.index, out.count))
            previous = out.message
        return len(self.messages)

    def keep(self, mark: Mark) -> None:
        pass

    def retained_from(self) -> int:
        return 1

    def published(self) -> Iterator[PublishedMessage]:
        for seq, (m, position, index, _) in enumerate(self.messages, start=1):
            yield PublishedMessage(seq, m.subject, m.idempotency_key, position, index)

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        return Fence(owner, 1, lease_ms)

    def release(self, owner: str) -> None:
        pass


def _log() -> tuple[list[tuple[object, int]], dict[UUID, list[object]]]:
    events: list[object] = []
    for agg in one_of_each("u"):
        events += agg.collect_events()
    log = [(e, p) for p, e in enumerate(events, start=1)]
    by_id: dict[UUID, list[object]] = {}
    for e in events:
        by_id.setdefault(e.originator_id, []).append(e)  # type: ignore[attr-defined]
    return log, by_id


def _history(by_id: dict[UUID, list[object]]) -> Any:
    def history(originator_id: UUID, version: int) -> Sequence[object]:
        return [e for e in by_id[originator_id] if e.originator_version <= version]  # type: ignore[attr-defined]

    return history


def _run(projection: OutboxProjection, log: list[tuple[object, int]], batch: int) -> None:
    base = projection.position()
    pending = [(e, p) for e, p in log if p > base]
    for i in range(0, len(pending), batch):
        chunk = pending[i : i + batch]
        projection.apply_batch(chunk, base=base)
        base = chunk[-1][1]


def test_each_event_leads_to_its_messages_once() -> None:
    log, by_id = _log()
    stream = InMemoryOutboxStream()
    projection = OutboxProjection(stream, _history(by_id))
    _run(projection, log, batch=4)
    _run(OutboxProjection(stream, _history(by_id)), log, batch=4)  # a restart: nothing new
    assert len(stream.messages) == MESSAGES_PER_ROUND
    keys = [m.idempotency_key for m, *_ in stream.messages]
    assert len(set(keys)) == len(keys)
    changed = [json.loads(m.body) for m, *_ in stream.messages if "phase" in m.subject]
    assert [(c["payload"]["from_phase"], c["payload"]["to_phase"]) for c in changed] == [
        ("DESIGN", "BUILD"),
        ("BUILD", "TEST"),
    ]


@pytest.mark.parametrize("crash_after", range(1, MESSAGES_PER_ROUND))
def test_a_crash_between_messages_resumes_with_the_next_one(crash_after: int) -> None:
    log, by_id = _log()
    whole = InMemoryOutboxStream()
    _run(OutboxProjection(whole, _history(by_id)), log, batch=100)
    stream = InMemoryOutboxStream()
    stream.crash_after = crash_after
    with pytest.raises(Crash):
        _run(OutboxProjection(stream, _history(by_id)), log, batch=100)
    stream.crash_after = None
    _run(OutboxProjection(stream, _history(by_id)), log, batch=100)  # the restarted process
    assert [m.body for m, *_ in stream.messages] == [m.body for m, *_ in whole.messages]


def test_a_story_changing_back_and_forth_keeps_distinct_keys() -> None:
    story = Story.register("s-loop")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    story.change_phase(Phase.DESIGN, Phase.BUILD, at)
    story.change_phase(Phase.BUILD, Phase.DESIGN, at + timedelta(seconds=1))
    story.change_phase(Phase.DESIGN, Phase.BUILD, at + timedelta(seconds=2))
    assert not story.change_phase(Phase.DESIGN, Phase.BUILD, at + timedelta(seconds=2))
    events = story.collect_events()
    by_id = {story.id: list(events)}
    stream = InMemoryOutboxStream()
    _run(OutboxProjection(stream, _history(by_id)), [(e, p) for p, e in enumerate(events, 1)], 10)
    keys = [m.idempotency_key for m, *_ in stream.messages]
    assert len(keys) == 3 == len(set(keys))


class ArchitectSelected:
    """Stands in for the Deliberation event that records the architect's choice: the outbox
    reads it by class name and fields, not by import."""

    def __init__(self, before: object, **fields: object) -> None:
        self.originator_id = before.originator_id  # type: ignore[attr-defined]
        self.originator_version = before.originator_version + 1  # type: ignore[attr-defined]
        self.__dict__.update(fields)


def test_the_architects_choice_and_rationale_reach_the_decision() -> None:
    log, by_id = _log()
    completed = next(e for e, _ in log if type(e).__name__ == "Completed")
    history = by_id[completed.originator_id]  # type: ignore[attr-defined]
    choice = ArchitectSelected(
        history[-2], winner=completed.winner, rationale="Simplest correct one",  # type: ignore[attr-defined]
        candidates=list(completed.ranking), architect_id="architect-1",  # type: ignore[attr-defined]
    )  # fmt: skip
    history.insert(-1, choice)  # recorded before the deliberation completes
    at = next(i for i, (e, _) in enumerate(log) if e is completed)
    events = [e for e, _ in log[:at]] + [choice] + [e for e, _ in log[at:]]
    log = [(e, p) for p, e in enumerate(events, start=1)]
    stream = InMemoryOutboxStream()
    _run(OutboxProjection(stream, _history(by_id)), log, batch=100)
    body = next(json.loads(m.body) for m, *_ in stream.messages if "deliberation" in m.subject)
    architect = body["payload"]["architect"]
    assert architect["rationale"] == "Simplest correct one" and not architect["fallback"]
    assert body["payload"]["decisions"][0]["rationale"] == "Simplest correct one"


def test_followed_and_read_back_histories_give_the_same_bytes() -> None:
    """A running outbox folds what it followed; a restarted one reads histories back: the
    messages must not differ by a byte (else a restart could not recognise what is there)."""
    log, by_id = _log()
    followed = InMemoryOutboxStream()
    _run(OutboxProjection(followed, _history(by_id)), log, batch=100)
    restarted = InMemoryOutboxStream()
    for k in range(1, len(log) + 1):  # a new instance for every event: never follows one
        _run(OutboxProjection(restarted, _history(by_id)), log[:k], batch=1)
    assert [m.body for m, *_ in restarted.messages] == [m.body for m, *_ in followed.messages]


class LeasedStream(InMemoryOutboxStream):
    """Counts the lease renewals asked; ``taken_by`` set: another instance holds the lease."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0
        self.taken_by: str | None = None

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        self.asked += 1
        return None if self.taken_by not in (None, owner) else Fence(owner, 1, lease_ms)


def test_the_lease_is_asked_for_once_a_third_of_a_lease_not_once_a_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches within a third of a lease of the last renewal ask nothing; past it, the next
    batch renews; once another instance holds the lease, that batch publishes nothing."""
    import projectors.outbox.projection as module

    now = [100.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    log, by_id = _log()
    stream = LeasedStream()
    projection = OutboxProjection(stream, _history(by_id))
    fence = Fence("me", 1, 3000)
    base = projection.position()
    half = len(log) // 2
    for event, position in log[:half]:  # one event a batch, all within a second
        projection.apply_batch([(event, position)], base=base, fence=fence)
        base = position
    assert stream.asked == 1
    now[0] += 1.0  # a third of the 3 s lease later: renewed at the next batch
    stream.taken_by = "another"
    published = len(stream.messages)
    with pytest.raises(ProjectionFencedError):
        projection.apply_batch(log[half:], base=base, fence=fence)
    assert stream.asked == 2 and len(stream.messages) == published
    stream.taken_by = None
    base = projection.position()  # as the runner does after a refusal: asks again at once
    projection.apply_batch([(e, p) for e, p in log if p > base], base=base, fence=fence)
    assert stream.asked == 3
    assert len(stream.messages) == MESSAGES_PER_ROUND
