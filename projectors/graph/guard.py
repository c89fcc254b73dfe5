"""The read-only query API's guard: refuse Cypher that could write, before it reaches an engine.

It works on the text as the engine will tokenise it: comments, string literals and quoted
identifiers are removed first (so ``'CREATE'`` in a string or ``RETURN 1 AS `SET``` is fine, and
``/* */ CREATE`` is not), then the text is normalised (NFKC, so full-width or other compatibility
forms of a keyword read as the keyword) and searched, case-insensitively and by whole word, for:

* write clauses: CREATE, MERGE, SET, DELETE, DETACH DELETE, REMOVE, FOREACH;
* schema and administration: DROP, ALTER, RENAME, GRANT, REVOKE, DENY, TERMINATE, and
  index/constraint/table creation (covered by CREATE and DROP);
* file, extension and database access: COPY, LOAD (LOAD CSV, LOAD FROM), IMPORT, EXPORT,
  INSTALL, UNINSTALL, ATTACH, USE, CHECKPOINT, and explicit transactions (BEGIN, COMMIT, ROLLBACK);
* ``CALL``, except a subquery ``CALL { … }`` (its body is searched like the rest) and the
  read-only catalogue procedures in ``READ_PROCEDURES``; writing APOC namespaces.

Also refused: more than one statement (``;`` followed by anything), and invisible format or
control characters outside strings (a zero-width space inside a keyword is a trick, not Cypher).
Both adapters add the engine's own guarantee behind this one (Neo4j read sessions; LadybugDB
``READ ONLY`` transactions), so a gap here is still not a write.
"""

from __future__ import annotations

import re
import unicodedata

from projectors.errors import ReadOnlyQueryError

__all__ = ["READ_PROCEDURES", "WRITE_KEYWORDS", "require_read_only", "strip_comments_and_strings"]

WRITE_KEYWORDS = (
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "FOREACH", "DROP", "ALTER", "RENAME",
    "GRANT", "REVOKE", "DENY", "TERMINATE", "COPY", "LOAD", "IMPORT", "EXPORT", "INSTALL",
    "UNINSTALL", "ATTACH", "USE", "CHECKPOINT", "BEGIN", "COMMIT", "ROLLBACK",
)  # fmt: skip

READ_PROCEDURES = frozenset(
    {
        # Neo4j catalogue
        "db.labels", "db.relationshiptypes", "db.propertykeys", "db.schema.visualization",
        "db.schema.nodetypeproperties", "db.schema.reltypeproperties",
        # LadybugDB (Kùzu) catalogue
        "show_tables", "table_info", "show_connection", "db_version", "show_functions",
    }
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
_CALL = re.compile(r"\bCALL\b\s*(\{|[A-Za-z_][\w.]*)?", re.IGNORECASE)
_APOC_WRITE = re.compile(
    r"\bapoc\s*\.\s*(create|merge|refactor|periodic|load|export|import|trigger|cypher|schema"
    r"|atomic|lock|nodes\s*\.\s*delete|do|custom|systemdb|util\s*\.\s*sleep)\b",
    re.IGNORECASE,
)
_ALLOWED_CONTROL = frozenset("\t\n\r")


def strip_comments_and_strings(cypher: str) -> str:
    """``cypher`` with each comment, string literal and quoted identifier replaced by a space."""
    return _TOKENS.sub(" ", cypher)


def _refuse(what: str) -> ReadOnlyQueryError:
    return ReadOnlyQueryError(f"Query refused: {what} is not allowed in a read-only query")


def require_read_only(cypher: str) -> None:
    """Raise ``ReadOnlyQueryError`` when ``cypher`` contains a writing (or escaping) clause."""
    code = strip_comments_and_strings(cypher)
    for ch in code:
        if ch not in _ALLOWED_CONTROL and unicodedata.category(ch) in ("Cc", "Cf"):
            raise _refuse(f"the invisible character U+{ord(ch):04X}")
    code = unicodedata.normalize("NFKC", code)
    found = _WRITE.search(code)
    if found:
        raise _refuse(found.group(1).upper())
    for call in _CALL.finditer(code):
        target = (call.group(1) or "").lower()
        if target != "{" and target not in READ_PROCEDURES:
            raise _refuse(f"CALL {call.group(1) or ''}".strip())
    apoc = _APOC_WRITE.search(code)
    if apoc:
        raise _refuse(f"the procedure apoc.{apoc.group(1)}")
    statements = [part for part in code.split(";") if part.strip()]
    if len(statements) > 1:
        raise _refuse("more than one statement")
