"""A first line of defence for the read-only query API: refuse Cypher that could write.

A keyword check on the text with comments and string literals removed (so ``'CREATE'`` inside a
string is fine and ``/* */ CREATE`` is not). Coarse on purpose: it also refuses ``CALL`` (procedures
may write) and ``LOAD``/``COPY``/``INSTALL`` (file and extension access). The Neo4j adapter adds
the server's own guarantee (read access mode); a later issue hardens the embedded side with the
engine's parser.
"""

from __future__ import annotations

import re

from projectors.errors import ReadOnlyQueryError

__all__ = ["WRITE_KEYWORDS", "require_read_only", "strip_comments_and_strings"]

WRITE_KEYWORDS = (
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "CALL", "COPY",
    "LOAD", "INSTALL", "FOREACH", "ATTACH", "IMPORT", "EXPORT", "CHECKPOINT", "BEGIN", "COMMIT",
    "ROLLBACK", "USE",
)  # fmt: skip

_TOKENS = re.compile(
    r"""
      //[^\n]*                     # line comment
    | /\*.*?(?:\*/|\Z)             # block comment (an unterminated one runs to the end)
    | '(?:[^'\\]|\\.)*(?:'|\Z)     # single-quoted string
    | "(?:[^"\\]|\\.)*(?:"|\Z)     # double-quoted string
    | `(?:[^`]|``)*(?:`|\Z)        # quoted identifier
    """,
    re.VERBOSE | re.DOTALL,
)
_WRITE = re.compile(r"\b(" + "|".join(WRITE_KEYWORDS) + r")\b", re.IGNORECASE)


def strip_comments_and_strings(cypher: str) -> str:
    """``cypher`` with each comment, string literal and quoted identifier replaced by a space."""
    return _TOKENS.sub(" ", cypher)


def require_read_only(cypher: str) -> None:
    """Raise ``ReadOnlyQueryError`` when ``cypher`` contains a writing (or escaping) clause."""
    found = _WRITE.search(strip_comments_and_strings(cypher))
    if found:
        msg = f"Query refused: {found.group(1).upper()} is not allowed in a read-only query"
        raise ReadOnlyQueryError(msg)
