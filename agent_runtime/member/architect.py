"""Architect selection: the prompt that shows the shortlist, and a tolerant parser of the choice.

After scoring, an orchestration asks one agent of the ARCHITECT council to choose the winner among
the top k candidates and say why (the seed's architect was a stub that always took the first).
The call rides the runtime's review path (``ReviewInput`` with ``purpose="select"``), so it
reaches Ray actors and NATS workers with no transport of its own; its answer comes back as one
``PeerReview`` per candidate: score 1.0 and the rationale on the chosen one, 0.0 on the others,
or ``score=None`` on every one when the answer named no candidate (the dispatcher then records
the fallback, highest score, with that reason).

Candidates are shown under the same neutral labels as peer reviews (``reviews.label_candidates``,
a hash of the content): neither an agent id nor the score order can sway the architect. The
answer is read from JSON (``{"winner": "B", "rationale": "..."}``, also inside prose or a code
fence, with ``choice``/``proposal``/``label`` for ``winner`` and ``reason``/``why`` for
``rationale``), else from a line such as ``Winner: B`` followed by the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agent_runtime.api import Candidate, ReviewInput
from agent_runtime.member.messages import ChatMessage
from agent_runtime.member.prompts import clip, role_prompt
from agent_runtime.member.reviews import PROPOSAL_CHARS, json_values
from aggregates.values import PeerReview

__all__ = [
    "ARCHITECT_ASK",
    "RATIONALE_CHARS",
    "SELECT",
    "choice_reviews",
    "parse_choice",
    "selection_messages",
    "selection_schema",
]

SELECT = "select"
"""The review purpose of an architect's selection."""
RATIONALE_CHARS = 600
ARCHITECT_ASK = "As the architect, choose the one proposal that should be adopted"
"""The sentence every selection prompt carries (a test's scripted model answers on it)."""
_WINNER_KEYS = ("winner", "choice", "chosen", "selected", "proposal", "label", "id")
_WHY_KEYS = ("rationale", "reason", "why", "justification", "explanation")


def selection_schema(labels: list[str]) -> dict[str, object]:
    """JSON schema of the answer: one label and a rationale."""
    return {
        "type": "object",
        "properties": {
            "winner": {"type": "string", "enum": labels},
            "rationale": {"type": "string", "maxLength": RATIONALE_CHARS},
        },
        "required": ["winner", "rationale"],
        "additionalProperties": False,
    }


def selection_messages(
    request: ReviewInput, labelled: Mapping[str, Candidate]
) -> list[ChatMessage]:
    """The architect's chat: its role, the task, the labelled candidates, the ask."""
    lines = [role_prompt("ARCHITECT"), "", f"Task: {request.task.strip()}"]
    if request.requirements:
        lines.append("Requirements:\n" + "\n".join(f"- {r}" for r in request.requirements))
    if request.rubric.strip():
        lines.append(f"Rubric: {request.rubric.strip()}")
    for label, c in labelled.items():
        lines += ["", f"Candidate {label}:", clip(c.content, PROPOSAL_CHARS)]
    example = next(iter(labelled), "A")
    lines += [
        "",
        f"{ARCHITECT_ASK}, judging correctness first, then fit with the requirements and the "
        "design. Say why in one or two sentences.",
        f'Answer with JSON only: {{"winner": "{example}", "rationale": "..."}}',
    ]
    return [ChatMessage("user", "\n".join(lines))]


def parse_choice(text: str, labels: list[str]) -> tuple[str | None, str]:
    """(the chosen label or None, the rationale or what was wrong with the answer)."""
    for data in json_values(text):
        if not isinstance(data, dict):
            continue
        label = next(
            (lb for k in _WINNER_KEYS if (lb := _label(data.get(k), labels)) is not None), None
        )
        if label is not None:
            why = next((str(data[k]) for k in _WHY_KEYS if isinstance(data.get(k), str)), "")
            return label, clip(why, RATIONALE_CHARS) or "no rationale given"
    names = "|".join(_WINNER_KEYS[:4])
    hit = re.search(
        rf"\b(?:{names})\b\s*(?:is|:|=|-)?\s*(?:candidate|proposal)?\s*\"?([A-P])\b\"?[\s.:,-]*(.*)",
        text,
        re.IGNORECASE | re.DOTALL,
    )
    if hit is not None and hit.group(1).upper() in labels:
        why = hit.group(2).strip()
        return hit.group(1).upper(), clip(why, RATIONALE_CHARS) or "no rationale given"
    return None, f"the architect's answer named no candidate: {clip(text, 160)!r}"


def _label(value: object, labels: list[str]) -> str | None:
    if not isinstance(value, str):
        return None
    m = re.fullmatch(r"\s*(?:candidate\s+|proposal\s+)?([A-Pa-p])\s*", value)
    if m is None or m.group(1).upper() not in labels:
        return None
    return m.group(1).upper()


def choice_reviews(
    reviewer: str, labelled: Mapping[str, Candidate], label: str | None, note: str
) -> tuple[PeerReview, ...]:
    """The choice as reviews, in label order (see the module docstring)."""
    if label is None:
        return tuple(
            PeerReview(reviewer, c.agent_id, None, note, "fallback") for c in labelled.values()
        )
    return tuple(
        PeerReview(reviewer, c.agent_id, 1.0 if lb == label else 0.0, note if lb == label else "")
        for lb, c in labelled.items()
    )
