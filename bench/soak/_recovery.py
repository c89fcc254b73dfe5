"""How long each fault held the system up, read from the times the events were written.

A deliberation under load writes an event every model call or so (well under a second with the
load generator's delays); a gap much longer than that is a stall. Each stall is charged to the
first fault inside it of a process on that path: nats-server, a dispatcher or a worker for a
deliberation's events; nats-server or the API for the acknowledgements of submissions, which
are one more such timeline. (The projections and the cache are not on either path: losing them
holds no deliberation up, and ``fleet verify`` at the end says whether they caught up.) A later
fault inside the same gap only prolongs it; with a fault every few seconds a stall can be
charged to the first of two that both played a part. A fault's recovery is its longest stall,
from the SIGKILL to the next event: how long a user waited because of it. A fault that held
nothing up (what it touched moved on at once) has none.

Timestamps are the events' own (taken by the writing process just before the write) and the
soak's wall clock, on the same machine.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.soak._chaos import Fault
from bench.soak._load import Submission
from bench.soak._stream import Histories

ORDER = ("nats", "valkey", "api", "projectors", "dispatcher", "worker")
ON_A_DELIBERATIONS_PATH = frozenset({"nats", "dispatcher", "worker"})
ON_THE_SUBMISSIONS_PATH = frozenset({"nats", "api"})


@dataclass
class RecoveryRow:
    """One kind of process: what happened to it and what it cost."""

    kind: str
    kills: int = 0
    exits: int = 0
    """Times it exited on its own and was started again (a part failed; see its log)."""
    not_back: int = 0
    failed_starts: int = 0
    """Starts that exited before the process was ready (it was started again)."""
    restart_s: list[float] = field(default_factory=list)
    """Start to ready, per restart."""
    held_up: int = 0
    """Deliberations (and submissions) one of its faults stalled."""
    recovery_s: list[float] = field(default_factory=list)
    """Per fault that stalled anything: from the fault to the last stalled one's next event."""
    never: int = 0
    """Faults after which something open then never wrote another event."""


def _timelines(
    histories: Histories, subs: Sequence[Submission]
) -> list[tuple[list[float], bool, frozenset[str]]]:
    """Each deliberation's event times, whether it ended, and which kinds of process can stall
    it; the same for the acknowledgements."""
    lines = [
        (
            [e.timestamp.timestamp() for e in h.events],
            h.terminal is not None,
            ON_A_DELIBERATIONS_PATH,
        )
        for h in histories.values()
    ]
    acks = sorted(s.acked_at for s in subs if s.acked_at is not None)
    lines.append((acks, True, ON_THE_SUBMISSIONS_PATH))
    return lines


def stalls(
    faults: Sequence[Fault], histories: Histories, subs: Sequence[Submission], stall_s: float
) -> tuple[dict[int, list[float]], dict[int, int]]:
    """Per fault (by index): the waits it caused, and how many timelines it left stuck."""
    order = sorted(range(len(faults)), key=lambda i: faults[i].at)
    waits: dict[int, list[float]] = {}
    stuck: dict[int, int] = {}
    for line, ended, kinds in _timelines(histories, subs):
        mine = [i for i in order if faults[i].kind in kinds]
        times = [faults[i].at for i in mine]
        for t0, t1 in itertools.pairwise(line):
            if t1 - t0 <= stall_s:
                continue
            k = bisect.bisect_right(times, t0)
            if k < len(times) and times[k] < t1:
                waits.setdefault(mine[k], []).append(t1 - times[k])
        if line and not ended:
            k = bisect.bisect_right(times, line[-1])
            if k < len(times):
                stuck[mine[k]] = stuck.get(mine[k], 0) + 1
    return waits, stuck


def recovery_rows(
    faults: Sequence[Fault], histories: Histories, subs: Sequence[Submission], stall_s: float
) -> list[RecoveryRow]:
    waits, stuck = stalls(faults, histories, subs, stall_s)
    rows: dict[str, RecoveryRow] = {}
    for i, f in enumerate(faults):
        row = rows.setdefault(f.kind, RecoveryRow(f.kind))
        if f.cause == "SIGKILL":
            row.kills += 1
        else:
            row.exits += 1
        row.failed_starts += max(0, f.starts - 1)
        if f.restart_s is None:
            row.not_back += 1
        else:
            row.restart_s.append(f.restart_s)
        if i in waits:
            row.held_up += len(waits[i])
            row.recovery_s.append(max(waits[i]))
        row.never += stuck.get(i, 0)
    return sorted(rows.values(), key=lambda r: ORDER.index(r.kind) if r.kind in ORDER else 99)


def p50_max(xs: Sequence[float]) -> str:
    if not xs:
        return "—"
    return f"{statistics.median(xs):.1f} / {max(xs):.1f} s"
