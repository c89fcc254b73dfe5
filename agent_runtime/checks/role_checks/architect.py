"""ARCHITECT answers: the structure the rubric asks for, and diagrams that parse.

* ``sections``: a design is read by its headings; at least three Markdown headings (``#`` …
  or a bold line standing alone) are expected, fewer is a warning each, none an error.
* ``decisions``: an ADR's shape: a decision stated, the alternatives weighed, and the
  consequences (or trade-offs) owned. Each part is looked for as a heading or a labelled line
  (``Decision:``, ``Alternatives considered``, ``Consequences``, ``Trade-offs``, …); a missing
  part is an error, since a decision without its alternatives cannot be reviewed.
* ``diagrams``: every Mermaid and PlantUML block must parse. Mermaid flowcharts (``graph`` /
  ``flowchart``) and sequence diagrams are parsed line by line (node declarations, edges with
  their arrows and labels, ``subgraph``/``end`` and ``loop``/``alt``/``opt``/…/``end`` balance,
  ``participant``/``actor``, messages ``A->>B: text``); other Mermaid types (class, state, ER,
  gantt, …) are accepted by their header only. PlantUML blocks must open with ``@startuml``
  and close with ``@enduml``, in balance. Limits: no rendering, so a diagram that parses may
  still draw badly; node ids are letters, digits and ``_``; Mermaid's rarer syntax
  (``A & B --> C``, markdown strings, participants with ``-`` in their name) is an error.
  Flowchart lines are scanned, not matched by one pattern, so no line can make the parse
  backtrack (a model's output is hostile input); lines over ``MAX_LINE`` are errors.
"""

from __future__ import annotations

import re

from agent_runtime.checks.role_checks._outcomes import findings, not_applicable
from agent_runtime.checks.role_checks.blocks import blocks_of
from aggregates.values import CheckOutcome

MIN_SECTIONS = 3

_HEADING = re.compile(r"(?m)^(#{1,6}\s+\S.*|\*\*[^*\n]{2,80}\*\*:?\s*)$")
_PARTS = {
    "decision": re.compile(r"(?im)^\W{0,8}(decision|we (will|decide|chose)|chosen option)\b"),
    "alternatives": re.compile(
        r"(?im)^\W{0,8}(alternatives?|options?( considered)?|considered options?|rejected)\b"
    ),
    "consequences": re.compile(
        r"(?im)^\W{0,8}(consequences?|trade-?offs?|implications?|pros and cons)\b"
    ),
}


def sections_check(answer: str) -> CheckOutcome:
    if not answer.strip():
        return not_applicable("sections", "empty answer")
    headings = _HEADING.findall(re.sub(r"```.*?(```|\Z)", "", answer, flags=re.DOTALL))
    n = len(headings)
    errors = ["no section headings"] if n == 0 else []
    warnings = [f"{n} section(s), {MIN_SECTIONS} expected"] if 0 < n < MIN_SECTIONS else []
    return findings("sections", errors, warnings, subject="sections", extra={"sections": str(n)})


def decisions_check(answer: str) -> CheckOutcome:
    if not answer.strip():
        return not_applicable("decisions", "empty answer")
    text = re.sub(r"```.*?(```|\Z)", "", answer, flags=re.DOTALL)
    missing = [part for part, pattern in _PARTS.items() if not pattern.search(text)]
    errors = [f"no {part} stated" for part in missing]
    return findings("decisions", errors, [], subject="decision record")


def diagrams_check(answer: str) -> CheckOutcome:
    mermaid, plantuml = blocks_of(answer, "mermaid"), blocks_of(answer, "plantuml")
    if not mermaid and not plantuml:
        return not_applicable("diagrams", "no Mermaid or PlantUML block")
    errors = [
        f"mermaid block {i}: {e}" for i, b in enumerate(mermaid, 1) if (e := mermaid_error(b))
    ]
    errors += [
        f"plantuml block {i}: {e}" for i, b in enumerate(plantuml, 1) if (e := plantuml_error(b))
    ]
    extra = {"diagrams": str(len(mermaid) + len(plantuml))}
    return findings("diagrams", errors, [], subject="diagrams", extra=extra)


# ----------------------------------------------------------------------------- PlantUML


def plantuml_error(code: str) -> str | None:
    lines = [ln.strip() for ln in code.splitlines() if ln.strip()]
    depth = 0
    for ln in lines:
        if ln.startswith("@start"):
            depth += 1
            if depth > 1:
                return f"{ln!r} before the previous diagram ended"
        elif ln.startswith("@end"):
            depth -= 1
            if depth < 0:
                return f"{ln!r} without @start"
    if not lines or not lines[0].startswith("@start"):
        return "does not open with @startuml"
    return "no @enduml" if depth else None


# ----------------------------------------------------------------------------- Mermaid

MAX_LINE = 400
"""Longer diagram lines are not parsed (an error): every pattern below is then bounded."""

_ID = re.compile(r"[A-Za-z0-9_]+")
# Node shapes, opener → closer: [[sub]] [(db)] ((circle)) ([stadium]) {{hex}} [/para/] [\alt\]
# [box] (round) {rhombus} >flag]. Longest opener first; the text up to the closer is free.
_SHAPES: tuple[tuple[str, str], ...] = (
    ("[[", "]]"),
    ("[(", ")]"),
    ("((", "))"),
    ("([", "])"),
    ("{{", "}}"),
    ("[/", "/]"),
)
_SHAPES += (("[\\", "\\]"), ("[", "]"), ("(", ")"), ("{", "}"), (">", "]"))
_CLASS = re.compile(r":::[A-Za-z0-9_]+")
# Links: --> --- -.-> ==> --x --o <-->, and the labelled -- text --> -. text .-> == text ==>.
# One lazy run before a fixed terminator each: linear, whatever the line holds.
_ARROWS = [
    re.compile(r"<?--\s[^-|]*?-->"),
    re.compile(r"<?-\.\s[^.|]*?\.->"),
    re.compile(r"<?==\s[^=|]*?==>"),
    re.compile(r"<?(?:-{2,}|={2,}|-\.+-)(?:>|x|o)?"),
]
_LINK_TEXT = re.compile(r"\|[^|]*\|")


def _skip_space(ln: str, i: int) -> int:
    while i < len(ln) and ln[i].isspace():
        i += 1
    return i


def _node_end(ln: str, i: int) -> int | None:
    """Where the node starting at ``i`` ends, or None when none starts there."""
    m = _ID.match(ln, i)
    if m is None:
        return None
    i = m.end()
    for opener, closer in _SHAPES:
        if ln.startswith(opener, i):
            close = ln.find(closer, i + len(opener))
            if close < 0:
                return None
            i = close + len(closer)
            break
    c = _CLASS.match(ln, i)
    return c.end() if c else i


def _flow_line_parses(ln: str) -> bool:
    """A node, then any number of (link, optional |text|, node), then an optional ``;``."""
    i = _node_end(ln, 0)
    if i is None:
        return False
    while True:
        i = _skip_space(ln, i)
        if i == len(ln) or ln[i:] == ";":
            return True
        link = next((m for a in _ARROWS if (m := a.match(ln, i))), None)
        if link is None:
            return False
        i = _skip_space(ln, link.end())
        text = _LINK_TEXT.match(ln, i)
        i = _skip_space(ln, text.end() if text else i)
        end = _node_end(ln, i)
        if end is None:
            return False
        i = end


_FLOW_KEYWORDS = re.compile(r"^(classDef|class|style|linkStyle|click|direction)\b")
_FLOW_HEADER = re.compile(r"^(graph|flowchart)(\s+(TB|TD|BT|RL|LR))?\s*;?$")

_SEQ_BLOCKS = re.compile(r"^(loop|alt|opt|par|critical|break|rect|box)\b")
_SEQ_MIDDLE = re.compile(r"^(else|and|option)\b")
_SEQ_DECL = re.compile(r"^(participant|actor)\s+\S+")
_SEQ_OTHER = re.compile(
    r"^(autonumber|(de)?activate\s+\S+|note\s+(over|left of|right of)\s+[^:]+:.*"
    r"|title\b.*|create\s+\S.*|destroy\s+\S+)$",
    re.IGNORECASE,
)
_SEQ_MESSAGE = re.compile(
    r"^[^\s:<>-][^:<>-]*(-{1,2}>>|-{1,2}>|-{1,2}x|-{1,2}\)|<<-{1,2}>>)[+-]?[^:<>-]+:.*$"
)
_OTHER_HEADERS = re.compile(
    r"^(classDiagram(-v2)?|stateDiagram(-v2)?|erDiagram|gantt|pie|journey|gitGraph|mindmap|timeline|quadrantChart|C4Context|C4Container|requirementDiagram|sankey-beta|xychart-beta|block-beta)\b"
)


def _mermaid_lines(code: str) -> list[str]:
    lines = []
    for raw in code.splitlines():
        ln = raw.strip()
        if not ln or ln.startswith("%%"):
            continue
        lines.append(ln)
    return lines


def mermaid_error(code: str) -> str | None:
    """The first problem found in a Mermaid block, or None when it parses (see the limits)."""
    lines = _mermaid_lines(code)
    if lines and lines[0] == "---":  # front matter
        end = lines.index("---", 1) if "---" in lines[1:] else len(lines)
        lines = lines[end + 1 :]
    if not lines:
        return "empty diagram"
    header, body = lines[0], lines[1:]
    if _FLOW_HEADER.match(header):
        return _flowchart_error(body)
    if header == "sequenceDiagram":
        return _sequence_error(body)
    if _OTHER_HEADERS.match(header):
        return None
    return f"unknown diagram type {header.split()[0]!r}"


def _flowchart_error(body: list[str]) -> str | None:
    depth = 0
    for n, ln in enumerate(body, start=2):
        if ln.startswith("subgraph"):
            depth += 1
        elif ln == "end":
            depth -= 1
            if depth < 0:
                return f"line {n}: 'end' without 'subgraph'"
        elif len(ln) > MAX_LINE:
            return f"line {n}: longer than {MAX_LINE} characters"
        elif not (_FLOW_KEYWORDS.match(ln) or _flow_line_parses(ln)):
            return f"line {n}: cannot parse {ln[:60]!r}"
    return f"{depth} 'subgraph' without 'end'" if depth else None


def _sequence_error(body: list[str]) -> str | None:
    depth = 0
    for n, ln in enumerate(body, start=2):
        if _SEQ_BLOCKS.match(ln):
            depth += 1
        elif ln == "end":
            depth -= 1
            if depth < 0:
                return f"line {n}: 'end' without an open block"
        elif _SEQ_MIDDLE.match(ln):
            if depth == 0:
                return f"line {n}: {ln.split()[0]!r} outside a block"
        elif len(ln) > MAX_LINE:
            return f"line {n}: longer than {MAX_LINE} characters"
        elif not (_SEQ_DECL.match(ln) or _SEQ_OTHER.match(ln) or _SEQ_MESSAGE.match(ln)):
            return f"line {n}: cannot parse {ln[:60]!r}"
    return f"{depth} block(s) without 'end'" if depth else None
