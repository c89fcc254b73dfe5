"""The projectors' error root. Messages name the projection and the position."""

from __future__ import annotations


class ProjectionError(Exception):
    """Something went wrong in a projection or its runner."""


class ProjectionStoppedError(ProjectionError):
    """A runner stopped because its projection raised; ``__cause__`` is the original error."""


class ReadOnlyQueryError(ProjectionError):
    """A query given to the read-only query API would write (or load, or call procedures)."""
