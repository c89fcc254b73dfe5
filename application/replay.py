"""Replay from the source of truth: read one deliberation's (or council's) events back from
JetStream and fold.

Used by ``fleet replay``. It opens its own read-only use of the event store (no gRPC server
needed), so it also works when the API is down.
"""

from __future__ import annotations

from aggregates import Council, CouncilStateError, Role, council_id, deliberation_id
from application.app import fold, jetstream_application
from application.errors import DeliberationNotFoundError
from application.events import FleetEvent, fleet_event
from application.timeline import History, fold_history


def replay(nats_url: str, stream: str, task_id: str, to_version: int = 0) -> History:
    app = jetstream_application(nats_url, stream)
    try:
        d_id = deliberation_id(task_id)
        events = [fleet_event(e) for e in app.events.get(d_id)]
        if not events:
            raise DeliberationNotFoundError(f"no deliberation with task id {task_id!r} ({d_id})")
        return fold_history(events, to_version or None)
    finally:
        app.close()


def replay_council(
    nats_url: str, stream: str, role: str, to_version: int = 0
) -> tuple[Council, list[FleetEvent]]:
    """``role``'s council folded from its events (up to ``to_version``), and those events.

    Raises:
        InvalidDeliberationError: an unknown role.
        CouncilStateError: the role never had a council.
    """
    r = Role.parse(role).value
    app = jetstream_application(nats_url, stream)
    try:
        events = [fleet_event(e) for e in app.events.get(council_id(r), lte=to_version or None)]
    finally:
        app.close()
    if not events:
        raise CouncilStateError("role", f"the {r} council has no events")
    folded = fold(None, events)
    assert isinstance(folded, Council)
    return folded, events
