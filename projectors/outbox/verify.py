"""``fleet verify`` for the outbox: the messages on the stream against those the log leads to.

Up to the outbox's position (the last event whose messages are all on the stream), every
message the log leads to must be there exactly once, with the key derived from its event, in
the log's order; and every message Fleet published must be one the log leads to. What is
missing, doubled, out of order or unexplained is a difference naming the subject, the event's
stream sequence (``causation_id``) and the aggregate.

A stream whose limits drop old messages (``AGENT_RESPONSES`` keeps an hour) no longer holds
what came before its oldest message of Fleet's: those are not expected (nothing tells a dropped
message from one never published); everything from that message on is checked as above.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from uuid import UUID

from eventsourcing.application import Application

from projectors.outbox.projection import OutboxProjection
from projectors.verify import Difference

__all__ = ["verify_outbox"]

_PAGE = 1000


def verify_outbox(app: Application[UUID], projection: OutboxProjection) -> list[Difference]:
    """The outbox's differences (empty when its stream holds exactly what the log leads to)."""
    published = list(projection.stream.published())
    mark = projection.stream.tail()
    # Messages before the oldest one still held may have been dropped by the stream's limits.
    checked_from = 0
    dropped = projection.stream.retained_from() > 1
    if dropped:
        checked_from = min((p.position for p in published), default=mark.position + 1)
    upto = mark.position if mark.complete else mark.position - 1
    name = projection.name
    expected: dict[str, tuple[str, int, str]] = {}  # key → (subject, position, aggregate id)
    order: list[str] = []
    position = 0
    history = projection.history
    while position < upto:
        page = app.recorder.select_notifications(position + 1, _PAGE, stop=upto)
        if not page:
            break
        for n in page:
            position = n.id
            if n.id > upto:
                break
            event = app.mapper.to_domain_event(n)
            if not projection.handles(event):
                continue
            agg = str(getattr(event, "originator_id", ""))
            for m in projection.derive(event, n.id, history):
                expected[m.idempotency_key] = (m.subject, n.id, agg)
                order.append(m.idempotency_key)
    # A half-published last event: the messages that are there count, the rest are to come.
    partial = {p.idempotency_key for p in published if p.position == mark.position}
    seen = Counter(p.idempotency_key for p in published)
    out: list[Difference] = []
    for key in order:
        subject, pos, agg = expected[key]
        if pos < checked_from or (dropped and pos == checked_from and seen[key] == 0):
            continue  # (the oldest event held may have lost its first messages)
        if seen[key] == 0:
            out.append(Difference(name, agg, "", f"{subject} of event {pos} is missing"))
        elif seen[key] > 1:
            detail = f"{subject} of event {pos} published {seen[key]} times"
            out.append(Difference(name, agg, "", detail))
    for p in published:
        if p.idempotency_key not in expected and p.idempotency_key not in partial:
            detail = f"{p.subject} at stream sequence {p.stream_seq} follows from no event"
            out.append(Difference(name, "", "", detail))
    places = [(p.position, p.index) for p in published]
    for (a, b), p in zip(pairwise(places), published[1:], strict=False):
        if b <= a:
            detail = f"{p.subject} at stream sequence {p.stream_seq} is out of the log's order"
            out.append(Difference(name, "", "", detail))
    return out
