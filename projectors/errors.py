"""The projectors' error root. Messages name the projection and the position."""

from __future__ import annotations


class ProjectionError(Exception):
    """Something went wrong in a projection or its runner."""


class ProjectionStoppedError(ProjectionError):
    """A runner stopped because its projection raised; ``__cause__`` is the original error."""


class ReadOnlyQueryError(ProjectionError):
    """A query given to the read-only query API would write (or load, or call procedures)."""


class InvalidQueryError(ProjectionError):
    """The graph engine rejected a read query (syntax, unknown label or property, bad parameter).

    Adapters translate their engine's error into this one, so callers can tell a user's bad query
    (INVALID_ARGUMENT) from an engine that is down (UNAVAILABLE).
    """
