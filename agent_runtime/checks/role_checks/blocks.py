"""Fenced blocks of an answer by language, for the tools that judge each kind.

Languages are told by the fence's tag (``sh``, ``dockerfile``, ``yaml``, ``sql``, ``mermaid``, …);
an untagged block is recognised by its first line where that is unambiguous (a shebang, a
``FROM`` line, ``apiVersion:``, ``@startuml``). An unclosed last fence (an answer cut by
``max_tokens``) still counts, so a truncated file is judged rather than dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)

_TAGS: dict[str, str] = {
    "python": "python",
    "py": "python",
    "python3": "python",
    "py3": "python",
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "zsh": "shell",
    "dockerfile": "dockerfile",
    "docker": "dockerfile",
    "containerfile": "dockerfile",
    "yaml": "yaml",
    "yml": "yaml",
    "sql": "sql",
    "postgresql": "sql",
    "postgres": "sql",
    "mysql": "sql",
    "sqlite": "sql",
    "mermaid": "mermaid",
    "plantuml": "plantuml",
    "puml": "plantuml",
    "uml": "plantuml",
}


@dataclass(frozen=True)
class Block:
    kind: str
    """python, shell, dockerfile, yaml, sql, mermaid, plantuml, or "" when unknown."""
    code: str


def _sniff(code: str) -> str:
    first = code.lstrip().split("\n", 1)[0].strip()
    if first.startswith("#!") and ("sh" in first.rsplit("/", 1)[-1]):
        return "shell"
    if re.match(r"(?i)^(FROM|ARG)\s+\S", first) and re.search(r"(?im)^FROM\s+\S", code):
        return "dockerfile"
    if first.startswith("apiVersion:") or first == "---":
        return "yaml"
    if first.startswith("@startuml"):
        return "plantuml"
    return ""


def extract_blocks(text: str) -> list[Block]:
    """Every non-empty fenced block with its kind, in the answer's order."""
    out = []
    for m in _FENCE.finditer(text):
        tag, code = m.group(1).lower(), m.group(2)
        if not code.strip():
            continue
        out.append(Block(_TAGS.get(tag, "") if tag else _sniff(code), code))
    return out


def blocks_of(text: str, kind: str) -> list[str]:
    return [b.code for b in extract_blocks(text) if b.kind == kind]
