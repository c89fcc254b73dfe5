"""``verify``: one run of the parts, between the projections' positions read before and after."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from eventsourcing.application import Application

from application.views import DeliberationView
from projectors.cache.board import DeliberationBoard
from projectors.graph.port import DecisionGraph
from projectors.verify._cache_diff import cache_diff
from projectors.verify._councils import council_differences, read_councils
from projectors.verify._graph_diff import shared_diff, side_diff
from projectors.verify._graph_expected import expected_graph
from projectors.verify._graph_read import Side, graph_versions, read_graph
from projectors.verify._log_scan import Log
from projectors.verify._report import VerifyReport, differences_of

_CACHE_BATCH = 500


def verify(
    app: Application[UUID],
    *,
    graph: DecisionGraph | None = None,
    graph_name: str = "graph",
    board: DeliberationBoard | None = None,
    cache_expiry_s: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Compare the graph and the cache with a replay of every deliberation.

    ``cache_expiry_s``: how long the cache keeps finished entries (``DELIBERATION_CLEANUP``; 0:
    for ever). None when unknown: a missing finished entry is then counted, not reported.
    """
    before: dict[str, int] = {}
    if graph is not None:
        before["graph"] = graph.position(graph_name)
    if board is not None:
        before["cache"] = board.position()
    head = app.recorder.max_notification_id() or 0
    report = VerifyReport(head=head, positions=dict(before))
    log = Log()
    log.extend(app, head)
    after = dict(before)
    found: dict[str, Side] = {}
    shared: Side = {}
    councils: Side = {}
    if graph is not None:
        found, shared = read_graph(graph, None)
        councils = read_councils(graph)
        after["graph"] = graph.position(graph_name)
    views: dict[UUID, DeliberationView | None] = {}
    if board is not None:
        ids = list(log.histories)
        for i in range(0, len(ids), _CACHE_BATCH):
            views.update(board.get_many(ids[i : i + _CACHE_BATCH]))
        after["cache"] = board.position()
    log.extend(app, max([head, *after.values()]))
    versions: dict[str, int] = {}
    if graph is not None:
        window = (before["graph"], after["graph"])
        versions = graph_versions(app, graph, graph_name, log, found, window)
    now = datetime.now(UTC)
    report.deliberations = len(log.histories)
    for done, (d_id, history) in enumerate(log.histories.items(), start=1):
        if board is not None and d_id in views:
            window = (history.at(before["cache"]), history.at(after["cache"]))
            cached = cache_diff(history, views[d_id], window, cache_expiry_s, now, report)
            report.differences += differences_of("cache", log, str(d_id), cached)
        if graph is not None:
            version = versions.get(str(d_id), history.at(after["graph"]))
            expected = expected_graph(history, version) if version else {}
            graphed = list(side_diff(found.pop(str(d_id), {}), expected))
            report.differences += differences_of("graph", log, str(d_id), graphed)
        if on_progress is not None:
            on_progress(done, len(log.histories))
    if graph is not None:
        for stray, side in found.items():  # records of no deliberation in the log
            report.differences += differences_of("graph", log, stray, list(side_diff(side, {})))
        lo, hi = before["graph"], after["graph"]
        report.differences += shared_diff(shared, log, lo, hi)
        report.differences += council_differences(councils, log, lo, hi)
    return report
