"""Verification: replay every deliberation and report each place the graph or the cache differs.

The cache: every field of each entry (``DeliberationView``, result by result) against the view
built from the replay at the entry's own version. A missing entry is a difference unless it may
have expired: finished, and longer ago than ``cache_expiry_s`` (unknown: counted as a miss only).

The graph: everything ``projectors.graph.statements`` writes for a deliberation: its node's
properties, SPAWNED from its Plan, WON_BY, each proposal on time or late with every property and
its HAS_PROPOSAL and PROPOSED links, each CRITIQUED link with its properties, and its timeline
(one Event per event, with stream sequence, type, time, version, agent and detail, linked by
HAD_EVENT); the shared Agent and Plan nodes; and the councils (each Council node and every
membership over time, ``_councils``). What no event explains is a difference too.
Expectations come from the log, not from the statements: the replay gives the state, the events
what the aggregate does not keep (each event's sequence and time, late proposals, when a critique
was made). A difference names the deliberation, the node or link, the field, and both values.

A live node projects while it is verified; each read sees a position between the projection's
positions read before and after it. A deliberation with no event in between was seen whole at
one version; one that moved is read again alone until it holds still (``_SETTLE_TRIES``). Agent
and Plan nodes are shared, so they may hold any value they had between the two positions.

Cost: one pass over the log (each event decoded once; a replay folds the events already read, no
second read of the store), one query per kind of node or link, cache reads pipelined.

The parts, each a module of this package: ``_log_scan`` (the pass over the log and each
deliberation's replays), ``_cache_diff`` (a cache entry against the replay), ``_graph_read`` (what
the graph holds, read again while it moves), ``_graph_expected`` (what it should hold),
``_graph_diff`` (the two compared), ``_report`` (the differences and how values are shown), and
``_compare`` (``verify``: one run of them all).
"""

from projectors.verify._compare import verify
from projectors.verify._report import Difference, VerifyReport

__all__ = ["Difference", "VerifyReport", "verify"]
