"""Reading values out of Cypher rows (``application.ports.CypherRow``).

A row's values are typed by the engine, not by Python: these narrow one to what its reader
needs, as ``int(value)`` and the schema's declared types would, and raise ``TypeError`` on a
value of another kind (a query that returned something its reader did not ask for).
"""

from __future__ import annotations

from typing import SupportsIndex, SupportsInt

__all__ = ["as_int", "optional_int", "optional_str"]


def as_int(value: object) -> int:
    """``int(value)`` for a row's value: an int, a float, a numeric string."""
    if isinstance(value, str | bytes | bytearray | SupportsInt | SupportsIndex):
        return int(value)
    msg = f"expected a number or a numeric string, got {type(value).__name__!r}"
    raise TypeError(msg)


def optional_int(value: object) -> int | None:
    """A column declared as an integer, which may be null."""
    if value is None or isinstance(value, int):
        return value
    msg = f"expected an integer or null, got {type(value).__name__!r}"
    raise TypeError(msg)


def optional_str(value: object) -> str | None:
    """A column declared as a string, which may be null."""
    if value is None or isinstance(value, str):
        return value
    msg = f"expected a string or null, got {type(value).__name__!r}"
    raise TypeError(msg)
