"""Every example Cypher query the manual shows, found in README.md and docs/*.md.

A query is found in a ```` ```cypher ```` block or in a ``fleet query "..."`` command line. A
block may hold several statements: a ``// comment`` line or a blank line ends one, and a line
that starts a new reading clause (``MATCH``, ``OPTIONAL MATCH``, ``UNWIND``, ``CALL``) after the
current statement has already returned starts the next (``MATCH … RETURN …`` lines one after
another). New docs files are picked up by the glob, so their queries are run without a change
here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DocQuery", "doc_files", "doc_queries", "parameters_of", "split_statements"]

_BLOCK = re.compile(r"^```cypher[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_CLI = re.compile(r"""fleet query\s+(?:"([^"]+)"|'([^']+)')""")
_STARTS = re.compile(r"^(OPTIONAL\s+MATCH|MATCH|UNWIND|CALL|WITH|RETURN)\b", re.IGNORECASE)
_NEW_READ = re.compile(r"^(OPTIONAL\s+MATCH|MATCH|UNWIND|CALL)\b", re.IGNORECASE)
_RETURN = re.compile(r"\bRETURN\b", re.IGNORECASE)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class DocQuery:
    """One statement and where the manual shows it."""

    cypher: str
    source: str
    """``file:line`` of its first line."""

    def __str__(self) -> str:
        return f"{self.source}: {' '.join(self.cypher.split())}"


def doc_files(root: Path) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def split_statements(block: str, first_line: int = 1) -> list[tuple[int, str]]:
    """The statements of a Cypher block, each with the line number it starts on."""
    out: list[tuple[int, str]] = []
    lines: list[str] = []
    start = first_line

    def flush() -> None:
        text = "\n".join(lines).strip()
        if text:
            out.append((start, text))
        lines.clear()

    for k, raw in enumerate(block.splitlines(), start=first_line):
        line = raw.strip()
        if not line or line.startswith("//"):
            flush()
            continue
        if lines and _NEW_READ.match(line) and _RETURN.search("\n".join(lines)):
            flush()
        if not lines:
            start = k
        lines.append(raw.rstrip())
    flush()
    return out


def doc_queries(root: Path) -> list[DocQuery]:
    """Every example query of the manual, in file order."""
    found: list[DocQuery] = []
    for path in doc_files(root):
        text = path.read_text()
        name = str(path.relative_to(root))
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start(1)) + 1
            for at, cypher in split_statements(m.group(1), line):
                found.append(DocQuery(cypher, f"{name}:{at}"))
        for m in _CLI.finditer(text):
            cypher = (m.group(1) or m.group(2)).strip()
            if _STARTS.match(cypher):  # not a placeholder such as "<cypher>"
                found.append(DocQuery(cypher, f"{name}:{text.count(chr(10), 0, m.start()) + 1}"))
    return found


def parameters_of(cypher: str) -> set[str]:
    """The ``$names`` a statement uses."""
    return set(_PARAM.findall(cypher))
