"""Role prompts and the two protocol prompts: propose (round 0) and critique-and-revise (later).

Short on purpose: the embedded model is Gemma 3 270M with a 2048-token context, and three agents
share one slow CPU server, so every prompt token costs every agent time. Peers' proposals are
clipped to a per-peer character budget for the same reason. The persona (from ``Sampling``) is
one sentence that nudges agents of the same role apart, which is where round-0 diversity comes
from besides temperature and seed.

Every chat ends with an assistant *prefill* that starts the answer in the shape we want (DEV: an
open ```` ```python ```` fence; other roles: a numbered list). The server continues it: vLLM with
``continue_final_message``, the embedded llama.cpp through the ``fleet-base`` chat format. This is
what makes the embedded model useful at all: Gemma 3 270M is a base model that echoes a chat back
but completes a started answer well. ``join_prefill`` puts prefill and continuation back together
into the proposal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent_runtime.api import AgentTurn, PeerProposal
from agent_runtime.member.messages import ChatMessage

__all__ = [
    "CODE_PREFILL",
    "DEFAULT_PERSONAS",
    "ROLE_PREFILLS",
    "ROLE_PROMPTS",
    "build_messages",
    "clip",
    "join_prefill",
    "prefill_of",
    "role_prefill",
    "role_prompt",
]

ROLE_PROMPTS: Mapping[str, str] = {
    "DEV": (
        "You are a senior Python developer. Answer with the code in one ```python block. The "
        "code must compile and use only names it defines or imports. After the code, in the "
        "same block, write two or three pytest tests (def test_...: with plain asserts) of what "
        "the task asks; they are run against the other developers' code too."
    ),
    "QA": (
        "You are a QA engineer. Answer with a short test strategy and concrete test cases "
        "(inputs, expected results, edge cases)."
    ),
    "ARCHITECT": (
        "You are a software architect. Answer with the components, their responsibilities, "
        "the data flow and the main trade-off, briefly."
    ),
    "DEVOPS": (
        "You are a DevOps engineer. Answer with the deployment, configuration, monitoring and "
        "rollback steps, briefly."
    ),
    "DATA": (
        "You are a data engineer. Answer with the data model, the pipeline steps and how data "
        "quality is checked, briefly."
    ),
}

CODE_PREFILL = "```python\n"
"""Opens the code block: the model writes code at once, and the server stops at the closing fence.
(A plan line before the fence gave the 270M model room to wander off into prose.)"""

ROLE_PREFILLS: Mapping[str, str] = {
    "DEV": CODE_PREFILL,
    "QA": "Test cases:\n1.",
    "ARCHITECT": "Components:\n1.",
    "DEVOPS": "Steps:\n1.",
    "DATA": "Data model:\n1.",
}
"""How each role's answer starts (round 0)."""
DEFAULT_PREFILL = "Plan:\n1."
CRITIQUE_PREFILL = "Critique:\n1."
"""Later rounds of prose roles begin with the critique the instructions ask for first."""

DEFAULT_PERSONAS: tuple[str, ...] = (
    "You prefer the simplest design that works.",
    "You care most about correctness and edge cases.",
    "You care most about performance and operability.",
    "You favour readability and small, well-named pieces.",
    "You look for the risk others miss.",
)
"""Handed out by agent index when a turn's Sampling has no persona."""

PEER_CHARS = 600
"""Characters of each peer's proposal shown in a later round (about 150 tokens)."""
OWN_CHARS = 800
CONTEXT_CHARS = 1200
"""Characters of a story task's context (about 300 tokens: ``application.task_context``'s
budget)."""

_FENCE_LINE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)")


def role_prompt(role: str) -> str:
    """The instructions of a role (case-insensitive); unknown roles get a generic expert."""
    return ROLE_PROMPTS.get(
        role.upper(), f"You are an expert {role.lower()}. Answer concisely and concretely."
    )


def role_prefill(role: str, round_no: int = 0) -> str:
    """How a role's answer starts: code roles always open a code block; prose roles start with a
    numbered list, and with the critique in rounds after the first."""
    prefill = ROLE_PREFILLS.get(role.upper(), DEFAULT_PREFILL)
    if round_no > 0 and prefill != CODE_PREFILL:
        return CRITIQUE_PREFILL
    return prefill


def prefill_of(messages: Sequence[ChatMessage]) -> str:
    """The assistant prefill that ends a chat, or "" when the chat ends with a user message."""
    return messages[-1].content if messages and messages[-1].role == "assistant" else ""


def join_prefill(prefill: str, completion: str) -> str:
    """The whole answer from the prefill and the server's continuation of it.

    * A code prefill's block is closed when the continuation left it open (the embedded server
      stops *at* the closing fence, and a stop sequence is not returned).
    * A continuation that itself starts a fenced block before closing the prefill's is a fresh,
      whole answer from a server that ignored the prefill: kept as it is, not glued on.
    * A prefill ending mid-line ("1.") gets a space before the continuation, which the client
      returns stripped.
    """
    if not prefill:
        return completion
    fence_open = prefill.count("```") % 2 == 1
    if fence_open:
        first = _FENCE_LINE.search(completion)
        if first is not None and first.group(1):
            return completion  # its first fence opens a block: an answer of its own
    glue = "" if prefill[-1].isspace() or not completion[:1].isalnum() else " "
    text = prefill + glue + completion
    if fence_open and text.count("```") % 2 == 1:
        text = text.rstrip() + "\n```"
    return text


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, marking the cut so the model knows text is missing."""
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 6, 0)].rstrip() + " [...]"


def _task_block(turn: AgentTurn) -> str:
    lines = [f"Task: {turn.task.strip()}"]
    if turn.requirements:
        lines.append("Requirements:\n" + "\n".join(f"- {r}" for r in turn.requirements))
    if turn.rubric.strip():
        lines.append(f"Judged on: {turn.rubric.strip()}")
    return "\n".join(lines)


def _peers_block(peers: Sequence[PeerProposal]) -> str:
    return "\n\n".join(
        f"Proposal {i} ({p.agent_id}):\n{clip(p.content, PEER_CHARS)}"
        for i, p in enumerate(peers, start=1)
    )


def build_messages(turn: AgentTurn) -> list[ChatMessage]:
    """The chat for one turn: one user message (role + persona, task, peers after round 0), then
    the assistant prefill that starts the answer (``role_prefill``).

    No system message: Gemma has no system role (its template prepends it to the first user
    turn), while every chat model follows instructions at the top of the user turn. One shape for
    every server.

    Round 0 asks for a proposal. Later rounds show the peers' latest proposals (and the agent's
    own previous one) and ask for a complete revised proposal, so the answer stands on its own as
    the agent's proposal for that round; prose roles first critique each peer in one line (code
    roles answer with code only: their prefill opens the code block).
    """
    persona = turn.sampling.persona.strip()
    system = role_prompt(turn.role) + (f" {persona}" if persona else "")
    task = _task_block(turn)
    if turn.context.strip():  # the story around the task, before the task itself
        task = f"Context:\n{clip(turn.context, CONTEXT_CHARS)}\n\n{task}"
    prefill = role_prefill(turn.role, turn.round if turn.peers else 0)
    if turn.round == 0 or not turn.peers:
        user = f"{task}\n\nGive your proposal."
    else:
        own = (
            f"Your previous proposal:\n{clip(turn.own_previous, OWN_CHARS)}\n\n"
            if turn.own_previous.strip()
            else ""
        )
        if turn.critiques:
            said = "\n".join(f"- {clip(c, PEER_CHARS // 2)}" for c in turn.critiques if c.strip())
            own += f"What reviewers said about your proposal:\n{said}\n\n" if said else ""
        ask = (
            "Write your complete revised code and its tests, keeping what is best from all of them."
            if prefill == CODE_PREFILL
            else "First critique each other proposal in one line. Then write your complete "
            "revised proposal, keeping what is best from all of them."
        )
        user = f"{task}\n\n{own}Other proposals:\n{_peers_block(turn.peers)}\n\n{ask}"
    return [ChatMessage("user", f"{system}\n\n{user}"), ChatMessage("assistant", prefill)]
