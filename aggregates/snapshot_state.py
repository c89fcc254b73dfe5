"""Aggregate state ↔ JSON-friendly values, for snapshots.

A Deliberation holds dicts keyed by (agent, round), dataclasses and enums; the event store's JSON
transcoder takes none of them, so a snapshot encodes them explicitly. Decoding only ever builds
the classes registered here (never a class named by stored data), so a snapshot cannot make the
process instantiate anything else.
"""

from __future__ import annotations

import dataclasses
from enum import Enum

_TYPE = "__t"


class SnapshotCodec:
    """Encodes values whose types are registered, plus dicts, lists and tuples of them."""

    def __init__(self, *types: type) -> None:
        self._types = {t.__name__: t for t in types}

    def encode(self, value: object) -> object:
        if isinstance(value, Enum):
            return {_TYPE: type(value).__name__, "v": value.value}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {
                f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
            return {_TYPE: type(value).__name__, "f": fields}
        if isinstance(value, tuple):
            return {_TYPE: "tuple", "i": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value) and _TYPE not in value:
                return {k: self.encode(v) for k, v in value.items()}
            items = [[self.encode(k), self.encode(v)] for k, v in value.items()]
            return {_TYPE: "map", "i": items}
        return value  # str, int, float, bool, None, datetime, UUID: the transcoder's own

    def decode(self, value: object) -> object:
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        tag = value.get(_TYPE)
        if tag is None:
            return {k: self.decode(v) for k, v in value.items()}
        if tag == "tuple":
            return tuple(self.decode(v) for v in value["i"])
        if tag == "map":
            return {self._key(self.decode(k)): self.decode(v) for k, v in value["i"]}
        cls = self._types.get(str(tag))
        if cls is None:
            raise ValueError(f"snapshot holds an unregistered type {tag!r}")
        if issubclass(cls, Enum):
            return cls(value["v"])
        return cls(**{k: self.decode(v) for k, v in value["f"].items()})

    @staticmethod
    def _key(key: object) -> object:
        return tuple(key) if isinstance(key, list) else key
