"""The history graph's vocabulary for the Cypher page: its labels, relationship types and their
properties, read from the projection's own schema declaration (``projectors.graph.ladybug.
SCHEMA``).

Why not ask the database: ``CALL db.labels()`` is Neo4j's, LadybugDB answers ``CALL
show_tables()`` instead, and a ``MATCH (n) RETURN DISTINCT labels(n)`` scans the whole graph and
misses a type no event has produced yet. Both engines hold the one vocabulary the projection
writes (ARCHITECTURE.md, "one vocabulary in both adapters"), and LadybugDB's schema statements
are where it is declared, with every property and each relationship's ends; read once.
"""

from __future__ import annotations

import functools
import re

from projectors.graph.ladybug import SCHEMA

INTERNAL = frozenset({"Projection"})
"""Bookkeeping nodes (each projection's position), not history."""

_NODE = re.compile(r"CREATE NODE TABLE IF NOT EXISTS (\w+)\((.*)\)\s*$", re.S)
_REL = re.compile(r"CREATE REL TABLE IF NOT EXISTS (\w+)\(FROM (\w+) TO (\w+)\s*,?(.*)\)\s*$", re.S)
_ADD = re.compile(r"ALTER TABLE (\w+) ADD IF NOT EXISTS (\w+) ")


def _properties(body: str) -> list[str]:
    names = []
    for part in re.split(r",(?![^(]*\))", body):
        words = part.split()
        if words and words[0].upper() != "PRIMARY":
            names.append(words[0])
    return names


@functools.cache
def vocabulary() -> dict[str, object]:
    """``{"labels": [{name, properties}], "relationships": [{name, from, to, properties}]}``."""
    labels: dict[str, list[str]] = {}
    rels: list[dict[str, str | list[str]]] = []
    for statement in SCHEMA:
        if m := _NODE.match(statement.strip()):
            labels[m[1]] = _properties(m[2])
        elif m := _REL.match(statement.strip()):
            rels.append({"name": m[1], "from": m[2], "to": m[3], "properties": _properties(m[4])})
        elif (m := _ADD.match(statement.strip())) and m[2] not in labels.get(m[1], [m[2]]):
            labels[m[1]].append(m[2])
    return {
        "labels": [
            {"name": k, "properties": v} for k, v in sorted(labels.items()) if k not in INTERNAL
        ],
        "relationships": sorted(rels, key=lambda r: str(r["name"])),
    }
