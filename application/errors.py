"""The read side's errors: what a query or a read port can refuse, in the read side's own words.

The graph adapters in ``projectors`` raise the query errors (they implement the read port), and
the API maps each class to a status once (``fleet/grpc/_errors.py``).
"""

from __future__ import annotations

__all__ = [
    "InvalidQueryError",
    "QueryRefusedError",
    "QueryTimeoutError",
    "ReadError",
    "ReadOnlyQueryError",
    "ServiceUnavailableError",
]


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
