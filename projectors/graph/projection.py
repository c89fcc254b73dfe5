"""The graph projection: each Deliberation event becomes Cypher statements run on a graph."""

from __future__ import annotations

from projectors.graph.port import DecisionGraph
from projectors.graph.statements import statements_for

__all__ = ["GraphProjection"]


class GraphProjection:
    """Writes the decision history into ``graph``; its position lives in the graph too."""

    def __init__(self, graph: DecisionGraph, *, name: str = "graph") -> None:
        self.name = name
        self.graph = graph

    def position(self) -> int:
        return self.graph.position(self.name)

    def apply(self, event: object, position: int) -> bool:
        statements = statements_for(event, position)
        if not statements:
            return False
        return self.graph.apply(self.name, position, statements)
