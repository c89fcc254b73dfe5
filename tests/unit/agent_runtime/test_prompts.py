"""Prompts: role and persona up front, peers shown and clipped in later rounds."""

from __future__ import annotations

from agent_runtime.api import AgentTurn, PeerProposal, Sampling
from agent_runtime.prompts import PEER_CHARS, ROLE_PROMPTS, build_messages, role_prompt


def make(round_no: int, peers: tuple[PeerProposal, ...] = (), role: str = "DEV") -> AgentTurn:
    return AgentTurn(
        deliberation_id="d",
        agent_id="a",
        role=role,
        round=round_no,
        task="Reverse a string.",
        requirements=("handle empty strings",),
        peers=peers,
        own_previous="my old idea",
        sampling=Sampling(persona="You look for the risk others miss."),
    )


def test_round_zero_asks_for_a_proposal() -> None:
    [msg] = build_messages(make(0))
    assert msg.role == "user"
    assert msg.content.startswith(ROLE_PROMPTS["DEV"])
    assert "You look for the risk others miss." in msg.content
    assert "Reverse a string." in msg.content and "- handle empty strings" in msg.content
    assert "Other proposals" not in msg.content


def test_later_round_shows_clipped_peers_and_asks_for_critique() -> None:
    long_text = "x" * (PEER_CHARS * 3)
    [msg] = build_messages(
        make(1, (PeerProposal("b", "use slicing"), PeerProposal("c", long_text)))
    )
    assert "use slicing" in msg.content and "my old idea" in msg.content
    assert "critique" in msg.content and "[...]" in msg.content
    assert len(msg.content) < 2 * PEER_CHARS + 1500


def test_every_role_has_a_prompt_and_unknown_roles_get_one() -> None:
    for role in ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA"):
        assert role_prompt(role.lower()) == ROLE_PROMPTS[role]
    assert "security" in role_prompt("SECURITY")
