"""The projectors' error root. Messages name the projection and the position."""

from __future__ import annotations

from application.errors import InvalidQueryError, QueryTimeoutError, ReadOnlyQueryError

__all__ = [
    "InvalidQueryError",
    "NothingToVerifyError",
    "PositionMovedError",
    "ProjectionError",
    "ProjectionFencedError",
    "ProjectionStoppedError",
    "QueryTimeoutError",
    "ReadOnlyQueryError",
    "UnknownProjectionError",
]


class ProjectionError(Exception):
    """Something went wrong in a projection or its runner."""


class ProjectionStoppedError(ProjectionError):
    """A runner stopped because its projection raised; ``__cause__`` is the original error."""


class UnknownProjectionError(ProjectionError):
    """No projection of that name runs where it was asked for (the message names those that do)."""


class NothingToVerifyError(ProjectionError):
    """Verification was asked where neither a graph nor a cache can be read: comparing nothing
    and calling it clean would be a check that cannot fail, so it is refused instead."""


class ProjectionFencedError(ProjectionError):
    """Another instance of this projection took it over (a newer epoch): this one must stop
    writing. Raised by a store in the same atomic step that would have written, so nothing was."""


class PositionMovedError(ProjectionError):
    """The store's position is not the one the writer based its batch on (the store was wiped,
    rebuilt or restored, or another writer moved it): re-read it and resume from there.

    Attributes:
        stored: the position the store holds.
    """

    def __init__(self, message: str, stored: int) -> None:
        super().__init__(message)
        self.stored = stored
