"""The graph projection: Fleet's decision history as a Cypher graph (LadybugDB or Neo4j).

Adapters are imported from their modules (``projectors.graph.ladybug``,
``projectors.graph.neo4j``) so that importing this package loads no database driver.
"""

from projectors.graph.port import DecisionGraph, Row
from projectors.graph.projection import GraphProjection
from projectors.graph.statements import Statement, statements_for

__all__ = ["DecisionGraph", "GraphProjection", "Row", "Statement", "statements_for"]
