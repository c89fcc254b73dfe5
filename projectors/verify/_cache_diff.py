"""The cache: each entry, field by field and result by result, against the replay at its version."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from datetime import datetime

from application.views import DeliberationView, ResultView, view_from_aggregate
from projectors.verify._log_scan import History
from projectors.verify._report import VerifyReport, pair

_CLOCK_SLACK_S = 5.0
"""Clocks of the writer and of this process may differ this much (expiry of cache entries)."""


def cache_diff(
    history: History,
    view: DeliberationView | None,
    window: tuple[int, int],
    expiry_s: float | None,
    now: datetime,
    report: VerifyReport,
) -> list[str]:
    lo, hi = window
    if view is None:
        return _missing_entry(history, window, expiry_s, now, report)
    if not lo <= view.version <= hi:
        return [f"version: cache {view.version}, the cache's position allows {lo}..{hi}"]
    return list(_view_diff(view, view_from_aggregate(history.replay(view.version))))


def _missing_entry(
    history: History,
    window: tuple[int, int],
    expiry_s: float | None,
    now: datetime,
    report: VerifyReport,
) -> list[str]:
    """A missing entry is right before its deliberation is projected and once it may have
    expired (finished, and longer ago than the expiry); a running one never expires."""
    lo, hi = window
    if lo == 0:  # not yet projected when the entries were read
        return []
    d = history.replay(hi)
    if not d.is_terminal:
        return [f"no cache entry (replay at version {hi}: {d.status.value})"]
    age = (now - (d.finished_at or d.modified_on)).total_seconds()
    if expiry_s is None or (expiry_s and age >= expiry_s - _CLOCK_SLACK_S):
        report.cache_misses += 1
        return []
    lives = f"finished entries live {expiry_s:g} s" if expiry_s else "entries never expire"
    return [f"no cache entry ({d.status.value} {age:.0f} s ago; {lives})"]


def _view_diff(got: DeliberationView, want: DeliberationView) -> Iterator[str]:
    for f in fields(DeliberationView):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if not f.compare or a == b:
            continue
        if f.name == "results":
            yield from _results_diff(a, b)
        else:
            yield f"{f.name}: {pair('cache', a, b)}"


def _results_diff(got: tuple[ResultView, ...], want: tuple[ResultView, ...]) -> Iterator[str]:
    mine = {r.agent_id: r for r in got}
    theirs = {r.agent_id: r for r in want}
    for agent in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(agent), theirs.get(agent)
        if a is None or b is None:
            yield f"results[{agent}]: only in the {'replay' if a is None else 'cache'}"
            continue
        for f in fields(ResultView):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if x != y:
                yield f"results[{agent}].{f.name}: {pair('cache', x, y)}"
