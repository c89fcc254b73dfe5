"""Projections of the event log: the decision graph and the deliberation cache, and their runner.

Each projection keeps its position in its own store, atomically with each change, so delivery
is at-least-once and the effect exactly once; any projection can be deleted and rebuilt from
position 0. Database adapters live in their own modules (``projectors.graph.ladybug``,
``projectors.graph.neo4j``, ``projectors.cache.valkey``) and are imported from there.
"""

from projectors.cache import (
    CacheProjection,
    DeliberationBoard,
    DeliberationView,
    FailureView,
    InMemoryDeliberationBoard,
    ResultView,
    view_from_aggregate,
)
from projectors.errors import ProjectionError, ProjectionStoppedError, ReadOnlyQueryError
from projectors.graph import DecisionGraph, GraphProjection
from projectors.projection import Projection
from projectors.runner import ProjectorRunner

__all__ = [
    "CacheProjection",
    "DecisionGraph",
    "DeliberationBoard",
    "DeliberationView",
    "FailureView",
    "GraphProjection",
    "InMemoryDeliberationBoard",
    "Projection",
    "ProjectionError",
    "ProjectionStoppedError",
    "ProjectorRunner",
    "ReadOnlyQueryError",
    "ResultView",
    "view_from_aggregate",
]
