"""The graph projection: each Deliberation event becomes Cypher statements run on a graph."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from projectors.fence import Fence
from projectors.graph.port import DecisionGraph
from projectors.graph.statements import statements_for

__all__ = ["GraphProjection"]


class GraphProjection:
    """Writes the decision history into ``graph``; its position (and fence) live there too.

    The graph's schema is set up on the projection's first read of its store, not when it is
    built: a graph server that is down when Fleet starts (Neo4j) then delays the projection,
    whose runner waits for it, instead of failing the start. Set-up is idempotent.
    """

    def __init__(self, graph: DecisionGraph, *, name: str = "graph") -> None:
        self.name = name
        self.graph = graph
        self._schema_ready = False

    def _ensure_schema(self) -> None:
        if not self._schema_ready:
            self.graph.ensure_schema()
            self._schema_ready = True

    def position(self) -> int:
        self._ensure_schema()
        return self.graph.position(self.name)

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        self._ensure_schema()
        epoch = self.graph.claim(self.name, owner, lease_ms)
        return None if epoch is None else Fence(owner=owner, epoch=epoch, lease_ms=lease_ms)

    def release(self, owner: str) -> None:
        self.graph.release(self.name, owner)

    def reset(self) -> None:
        self.graph.reset(self.name)

    def idle(self) -> None:
        """The runner has nothing queued: let the graph checkpoint (see ``DecisionGraph``)."""
        self.graph.checkpoint()

    def apply(self, event: object, position: int) -> bool:
        """Apply one event unfenced (tools and tests); False when not ours or already applied."""
        statements = statements_for(event, position)
        if not statements:
            return False
        return self.graph.apply(self.name, position, statements)

    def apply_batch(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> int:
        """Project ``items`` past ``base`` in one transaction; see ``DecisionGraph.apply_batch``."""
        return self.stage(items, base=base, fence=fence)()

    def stage(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> Callable[[], int]:
        """The events' statements now, the transaction when called (``StagedProjection``):
        translating events is much of a catch-up's CPU, done while the batch before commits."""
        batch = [(p, statements_for(e, p)) for e, p in items if p > base]
        graph, name = self.graph, self.name

        def write() -> int:
            return graph.apply_batch(name, batch, base=base, fence=fence)

        return write
