"""The cache projection: each deliberation's status and results, equal to the replay of its events.

``ValkeyDeliberationBoard`` lives in ``projectors.cache.valkey`` (imported from there, so this
package loads no client library).
"""

from application.views import DeliberationView, FailureView, ResultView, view_from_aggregate
from projectors.cache.board import DeliberationBoard, InMemoryDeliberationBoard
from projectors.cache.fold import evolve
from projectors.cache.projection import CacheProjection

__all__ = [
    "CacheProjection",
    "DeliberationBoard",
    "DeliberationView",
    "FailureView",
    "InMemoryDeliberationBoard",
    "ResultView",
    "evolve",
    "view_from_aggregate",
]
