"""The graph's port: apply statements with a position atomically, and answer read-only Cypher.

Adapters: ``LadybugGraph`` (embedded, the default and the tests) and ``Neo4jGraph`` (production).
Both run the same ``projectors.graph.statements``; only schema set-up differs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from projectors.graph.statements import Statement

__all__ = ["DEFAULT_LIMIT", "DecisionGraph", "Row"]

Row = dict[str, Any]
"""One result row, column name to a plain value (nodes come back as dicts of properties)."""

DEFAULT_LIMIT = 1000


class DecisionGraph(ABC):
    """A Cypher graph that holds Fleet's decision history and the graph projection's position."""

    @abstractmethod
    def ensure_schema(self) -> None:
        """Create tables, constraints and indexes that are missing. Idempotent."""

    @abstractmethod
    def position(self, name: str) -> int:
        """Projection ``name``'s stored position (0 when none)."""

    @abstractmethod
    def apply(self, name: str, position: int, statements: Sequence[Statement]) -> bool:
        """Run ``statements`` and store ``position`` in one transaction.

        Returns:
            False, changing nothing, when ``position`` is not past the stored one.
        """

    @abstractmethod
    def query(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[Row]:
        """Run a read-only query and return at most ``limit`` rows.

        Raises:
            ReadOnlyQueryError: the query would write.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s). Idempotent."""
