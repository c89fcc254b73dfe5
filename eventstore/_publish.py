"""One conditional write on the wire, as the write path sends it and lost-ack resolution sends
it again: one record is one request; several are one ADR-50 atomic batch
(``Nats-Batch-Id``/``-Sequence``/``-Commit``): all-or-nothing, contiguous sequences, not
interleaved with other writes. nats.py has no helper: the non-last messages go out with
``publish`` (no reply) and only the commit is a request.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from eventsourcing.persistence import DatabaseError
from nats.aio.client import Client as NATS
from nats.js import api

from eventstore._errors import check_reply
from eventstore._positions import Positions
from eventstore._records import Write

__all__ = ["publish"]


async def publish(
    nc: NATS,
    positions: Positions,
    writes: Sequence[Write],
    expected: dict[str, int],
    *,
    timeout: float,
) -> int:
    """Send ``writes``, each subject's first one conditional on its ``expected`` last sequence
    (0: none yet); return the stream sequence of the last one (recorded in ``positions`` as
    seen). A refusal raises as ``check_reply`` translates it (``WrongLastSequence`` on 10071)."""
    hdr_expected = api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value
    checked: set[str] = set()

    def headers(w: Write) -> dict[str, str]:
        # One check per subject per batch: a second one is refused (10164).
        if w.subject in checked:
            return {}
        checked.add(w.subject)
        return {hdr_expected: str(expected[w.subject])}

    if len(writes) == 1:
        w = writes[0]
        resp = await nc.request(w.subject, w.payload, timeout, headers=headers(w))
        ack = check_reply(resp.data, w.subject)
        return positions.seen(int(ack["seq"]))
    batch_id = uuid.uuid4().hex
    last = len(writes) - 1
    for i, w in enumerate(writes[:last], start=1):
        h = headers(w)
        h[api.Header.BATCH_ID.value] = batch_id
        h[api.Header.BATCH_SEQUENCE.value] = str(i)
        await nc.publish(w.subject, w.payload, headers=h)
    w = writes[last]
    h = headers(w)
    h[api.Header.BATCH_ID.value] = batch_id
    h[api.Header.BATCH_SEQUENCE.value] = str(len(writes))
    h[api.Header.BATCH_COMMIT.value] = "1"
    resp = await nc.request(w.subject, w.payload, timeout, headers=h)
    ack = check_reply(resp.data, f"atomic batch of {len(writes)} ending on {w.subject}")
    if int(ack.get("count", len(writes))) != len(writes):
        msg = f"atomic batch committed {ack.get('count')} of {len(writes)} messages"
        raise DatabaseError(msg)
    return positions.seen(int(ack["seq"]))
