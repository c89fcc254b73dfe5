"""The application's errors: "not found" under one root, and what a query or a read port can
refuse, in the read side's own words.

``NotFoundError`` is the one root of every "there is no such thing" the stores and reads raise;
the edges map it once (``fleet/grpc/_errors.py`` to NOT_FOUND, the web console to 404). It is a
``LookupError`` but on purpose not a ``KeyError``: a ``KeyError`` is what a mistyped dict lookup
raises, and when "not found" was a ``KeyError`` every ``except KeyError`` around a store call also
turned such a bug into a quiet NOT_FOUND. Catch ``NotFoundError``; a ``KeyError`` is a bug and
surfaces as one (INTERNAL, a 500, a traceback).

The graph adapters in ``projectors`` raise the query errors (they implement the read port), and
the API maps each class to a status once (``fleet/grpc/_errors.py``).
"""

from __future__ import annotations

__all__ = [
    "DeliberationNotFoundError",
    "InvalidQueryError",
    "NotFoundError",
    "PlanNotFoundError",
    "QueryRefusedError",
    "QueryTimeoutError",
    "ReadError",
    "ReadOnlyQueryError",
    "RecordNotFoundError",
    "ServiceUnavailableError",
    "StoryNotFoundError",
]


class NotFoundError(LookupError):
    """There is no such thing: the message names what was asked for (an id, a task id)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class DeliberationNotFoundError(NotFoundError):
    """No deliberation with this id (or task id) was ever requested."""


class StoryNotFoundError(NotFoundError):
    """No phase change of this story was ever recorded."""


class PlanNotFoundError(NotFoundError):
    """No plan with this id was ever approved."""


class RecordNotFoundError(NotFoundError):
    """No aggregate of the kind asked for has this id (a story, a derivation, ...)."""


class ReadError(Exception):
    """A read could not be answered as asked."""


class ReadOnlyQueryError(ReadError):
    """A query given to the read-only query API would write (or load, or call procedures)."""


class InvalidQueryError(ReadError):
    """The graph engine rejected a read query (syntax, unknown label or property, bad parameter).

    Adapters translate their engine's error into this one, so callers can tell a user's bad query
    (INVALID_ARGUMENT) from an engine that is down (UNAVAILABLE).
    """


class QueryTimeoutError(InvalidQueryError):
    """A read query ran past its time limit and was interrupted."""


class QueryRefusedError(ReadError, ValueError):
    """A Cypher query that is not read-only, or is malformed; refused before it runs."""


class ServiceUnavailableError(ReadError, RuntimeError):
    """A part Fleet needs for this read is not running (e.g. no graph configured)."""
