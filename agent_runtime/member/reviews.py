"""Peer review: the prompt, the JSON schema it asks for, and a tolerant parser of the answer.

An agent reviews its peers' proposals under neutral labels (A, B, C, …) assigned in the order of
a hash of each proposal's content, so neither an agent's id nor its position in the council can
sway a reviewer, and the same proposals always get the same labels. The answer is asked for as
JSON matching ``review_schema`` (the server constrains it when it supports structured output) and
read by ``parse_reviews``, which accepts:

1. JSON that matches the schema ............................ source ``structured``
2. JSON of another usable shape ({"A": 7}, a list, "rating" instead of "score"), JSON inside
   prose or a code fence, or "A: 7/10" style lines .......... source ``parsed``
3. nothing usable (the 270M base model often writes junk) ... ``score=None``, source ``fallback``

Ratings are 1..10 and stored normalised to [0, 1] ((r - 1) / 9); a number outside 0..10 is not a
rating. A reviewer that says nothing usable gets no say: the scorer uses a neutral 0.5 for the
missing rating and the record shows why (``fallback``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from agent_runtime.api import Candidate, ReviewInput
from agent_runtime.member.messages import ChatMessage
from agent_runtime.member.prompts import clip, role_prompt
from aggregates.values import PeerReview

__all__ = [
    "CRITIQUE_CHARS",
    "PROPOSAL_CHARS",
    "json_values",
    "label_candidates",
    "normalise_rating",
    "parse_reviews",
    "review_messages",
    "review_schema",
]

CRITIQUE_CHARS = 400
"""A critique is kept to this many characters (it is shown to the agent that revises)."""
PROPOSAL_CHARS = 700
_LABELS = "ABCDEFGHIJKLMNOP"
_TEXT_KEYS = ("critique", "comment", "reason", "rationale", "feedback", "text")
_SCORE_KEYS = ("score", "rating", "grade", "points")
_LABEL_KEYS = ("proposal", "label", "id", "target", "name")


def label_candidates(deliberation_id: str, candidates: Sequence[Candidate]) -> dict[str, Candidate]:
    """Neutral labels, ordered by a hash of (deliberation, content): not by agent or position."""

    def key(c: Candidate) -> tuple[str, str]:
        digest = hashlib.sha256(f"{deliberation_id}:{c.content}".encode()).hexdigest()
        return (digest, c.agent_id)

    ordered = sorted(candidates, key=key)
    return {_LABELS[i]: c for i, c in enumerate(ordered)}


def review_schema(labels: Sequence[str]) -> dict[str, object]:
    """JSON schema of a review answer: one {proposal, score 1..10, critique} per label."""
    return {
        "type": "object",
        "properties": {
            "reviews": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "proposal": {"type": "string", "enum": list(labels)},
                        "score": {"type": "integer", "minimum": 1, "maximum": 10},
                        "critique": {"type": "string", "maxLength": CRITIQUE_CHARS},
                    },
                    "required": ["proposal", "score", "critique"],
                    "additionalProperties": False,
                },
                "minItems": len(labels),
                "maxItems": len(labels),
            }
        },
        "required": ["reviews"],
        "additionalProperties": False,
    }


def review_messages(request: ReviewInput, labelled: Mapping[str, Candidate]) -> list[ChatMessage]:
    """The chat for one review: the reviewer's role, the task, the labelled proposals, the ask."""
    lines = [role_prompt(request.role), "", f"Task: {request.task.strip()}"]
    if request.requirements:
        lines.append("Requirements:\n" + "\n".join(f"- {r}" for r in request.requirements))
    if request.rubric.strip():
        lines.append(f"Rubric: {request.rubric.strip()}")
    for label, c in labelled.items():
        lines += ["", f"Proposal {label}:", clip(c.content, PROPOSAL_CHARS)]
    if request.purpose == "critique":
        ask = (
            "For each proposal, name its main flaw and how to fix it in one sentence, "
            "and rate it from 1 (poor) to 10 (excellent) against the requirements."
        )
    else:
        ask = (
            "Rate each proposal from 1 (poor) to 10 (excellent) against the rubric and the "
            "requirements, with a one-sentence reason. Judge correctness first."
        )
    example = ", ".join(
        f'{{"proposal": "{label}", "score": 7, "critique": "..."}}' for label in labelled
    )
    lines += ["", ask, f'Answer with JSON only: {{"reviews": [{example}]}}']
    return [ChatMessage("user", "\n".join(lines))]


def normalise_rating(value: object) -> float | None:
    """A 1..10 rating (0 accepted as the floor) → [0, 1]; anything else → None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*", value)
        if m is None:
            return None
        value = float(m.group(1))
    if not isinstance(value, int | float) or value != value:  # NaN
        return None
    if not 0 <= value <= 10:
        return None
    return round(min(max((float(value) - 1.0) / 9.0, 0.0), 1.0), 4)


def parse_reviews(
    text: str, labelled: Mapping[str, Candidate], *, reviewer: str
) -> list[PeerReview]:
    """One PeerReview per labelled candidate, in label order (see the module docstring)."""
    found, structured = _from_json(text, labelled)
    if not found:
        found, structured = _from_lines(text, labelled), False
    out: list[PeerReview] = []
    for label, c in labelled.items():
        got = found.get(label)
        if got is None or got[0] is None:
            note = (got[1] if got else "") or "no usable rating in the answer"
            out.append(
                PeerReview(reviewer, c.agent_id, None, clip(note, CRITIQUE_CHARS), "fallback")
            )
            continue
        score, critique = got
        source = "structured" if structured else "parsed"
        out.append(PeerReview(reviewer, c.agent_id, score, clip(critique, CRITIQUE_CHARS), source))
    return out


# ------------------------------------------------------------------------------ JSON


def json_values(text: str) -> list[object]:
    """Every JSON object or array found in ``text`` (whole, inside a code fence, or between
    the first opener and the last closer): what a tolerant reader of model output tries."""
    out: list[object] = []
    stripped = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", stripped, re.DOTALL)
    pieces = [stripped] + ([fence.group(1)] if fence else [])
    for piece in pieces:
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = piece.find(opener), piece.rfind(closer)
            if start == -1 or end <= start:
                continue
            try:
                out.append(json.loads(piece[start : end + 1]))
            except (json.JSONDecodeError, RecursionError):
                continue
    return out


def _from_json(
    text: str, labelled: Mapping[str, Candidate]
) -> tuple[dict[str, tuple[float | None, str]], bool]:
    for data in json_values(text):
        items: list[object]
        exact = isinstance(data, dict) and set(data) == {"reviews"}
        if isinstance(data, dict) and isinstance(data.get("reviews") or data.get("ratings"), list):
            items = list(data.get("reviews") or data.get("ratings") or [])
        elif isinstance(data, list):
            items, exact = data, False
        elif isinstance(data, dict):  # {"A": 7, "B": {"score": 5}}
            items = [
                {"proposal": k, **(v if isinstance(v, dict) else {"score": v})}
                for k, v in data.items()
            ]
            exact = False
        else:
            continue
        found: dict[str, tuple[float | None, str]] = {}
        for item in items:
            if not isinstance(item, dict):
                continue
            label = _label_of(item, labelled)
            if label is None or label in found:
                continue
            raw = next((item[k] for k in _SCORE_KEYS if k in item), None)
            note = next((str(item[k]) for k in _TEXT_KEYS if isinstance(item.get(k), str)), "")
            found[label] = (normalise_rating(raw), note)
            exact = exact and set(item) == {"proposal", "score", "critique"}
        if any(score is not None for score, _ in found.values()):
            return found, exact and len(found) == len(labelled)
    return {}, False


def _label_of(item: Mapping[str, object], labelled: Mapping[str, Candidate]) -> str | None:
    for k in _LABEL_KEYS:
        v = item.get(k)
        if isinstance(v, str):
            m = re.fullmatch(r"\s*(?:proposal\s+)?([A-Pa-p])\s*", v)
            if m and m.group(1).upper() in labelled:
                return m.group(1).upper()
    return None


# ------------------------------------------------------------------------------ lines


def _from_lines(
    text: str, labelled: Mapping[str, Candidate]
) -> dict[str, tuple[float | None, str]]:
    found: dict[str, tuple[float | None, str]] = {}
    # JSON cut short (max_tokens in a runaway string): its complete items are still readable.
    for m in re.finditer(r'"proposal"\s*:\s*"([A-P])"\s*,\s*"score"\s*:\s*(\d+(?:\.\d+)?)', text):
        score = normalise_rating(float(m.group(2)))
        if m.group(1) in labelled and m.group(1) not in found and score is not None:
            found[m.group(1)] = (score, "")
    for label in labelled:
        if label in found:
            continue
        pattern = (
            rf"(?:proposal\s+)?\b{label}\b\s*[:=)\-]\s*(?:score\s*[:=]?\s*)?"
            r"(\d+(?:\.\d+)?)(?:\s*/\s*10)?([^\n]*)"
        )
        hit = re.search(pattern, text, re.IGNORECASE if label != "A" else 0)
        if hit is None:
            continue
        score = normalise_rating(float(hit.group(1)))
        if score is not None:
            found[label] = (score, hit.group(2).strip(" -:.,"))
    return found
