"""Role prompts and the two protocol prompts: propose (round 0) and critique-and-revise (later).

Short on purpose: the embedded model is Gemma 3 270M with a 2048-token context, and three agents
share one slow CPU server, so every prompt token costs every agent time. Peers' proposals are
clipped to a per-peer character budget for the same reason. The persona (from ``Sampling``) is
one sentence that nudges agents of the same role apart, which is where round-0 diversity comes
from besides temperature and seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent_runtime.api import AgentTurn, PeerProposal
from agent_runtime.openai_client import ChatMessage

__all__ = ["DEFAULT_PERSONAS", "ROLE_PROMPTS", "build_messages", "clip", "role_prompt"]

ROLE_PROMPTS: Mapping[str, str] = {
    "DEV": (
        "You are a senior Python developer. Answer with a short plan and the code in one "
        "```python block. The code must compile and use only names it defines or imports."
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


def role_prompt(role: str) -> str:
    """The instructions of a role (case-insensitive); unknown roles get a generic expert."""
    return ROLE_PROMPTS.get(
        role.upper(), f"You are an expert {role.lower()}. Answer concisely and concretely."
    )


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
    """The chat for one turn: one user message = role + persona, task, and peers after round 0.

    No system message: Gemma has no system role (llama.cpp's ``gemma`` chat format silently drops
    it, and Gemma's own template prepends it to the first user turn), while every chat model
    follows instructions at the top of the user turn. One shape for every server.

    Round 0 asks for a proposal. Later rounds show the peers' latest proposals (and the agent's
    own previous one) and ask for a one-line critique of each and then a complete revised
    proposal, so the answer stands on its own as the agent's proposal for that round.
    """
    persona = turn.sampling.persona.strip()
    system = role_prompt(turn.role) + (f" {persona}" if persona else "")
    task = _task_block(turn)
    if turn.round == 0 or not turn.peers:
        user = f"{task}\n\nGive your proposal."
    else:
        own = (
            f"Your previous proposal:\n{clip(turn.own_previous, OWN_CHARS)}\n\n"
            if turn.own_previous.strip()
            else ""
        )
        user = (
            f"{task}\n\n{own}Other proposals:\n{_peers_block(turn.peers)}\n\n"
            "First critique each other proposal in one line. Then write your complete revised "
            "proposal, keeping what is best from all of them."
        )
    return [ChatMessage("user", f"{system}\n\n{user}")]
