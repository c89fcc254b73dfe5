"""Prompts: role and persona up front, peers shown and clipped in later rounds, and the
assistant prefill that starts each answer (and how it is joined back to the continuation)."""

from __future__ import annotations

from agent_runtime.api import AgentTurn, PeerProposal, Sampling
from agent_runtime.checks.static_checks import extract_code_blocks
from agent_runtime.member.prompts import (
    CODE_PREFILL,
    CRITIQUE_PREFILL,
    PEER_CHARS,
    ROLE_PREFILLS,
    ROLE_PROMPTS,
    build_messages,
    join_prefill,
    prefill_of,
    role_prompt,
)


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


def test_round_zero_asks_for_a_proposal_and_opens_the_code_block() -> None:
    msg, prefill = build_messages(make(0))
    assert msg.role == "user" and prefill.role == "assistant"
    assert prefill.content == CODE_PREFILL == "```python\n"
    assert msg.content.startswith(ROLE_PROMPTS["DEV"])
    assert "You look for the risk others miss." in msg.content
    assert "Reverse a string." in msg.content and "- handle empty strings" in msg.content
    assert "Other proposals" not in msg.content


def test_later_round_shows_clipped_peers_and_asks_for_critique() -> None:
    long_text = "x" * (PEER_CHARS * 3)
    peers = (PeerProposal("b", "use slicing"), PeerProposal("c", long_text))
    msg, prefill = build_messages(make(1, peers, role="QA"))
    assert "use slicing" in msg.content and "my old idea" in msg.content
    assert "critique" in msg.content and "[...]" in msg.content
    assert len(msg.content) < 2 * PEER_CHARS + 1500
    assert prefill.content == CRITIQUE_PREFILL


def test_later_dev_round_asks_for_revised_code_in_an_open_block() -> None:
    msg, prefill = build_messages(make(1, (PeerProposal("b", "use slicing"),)))
    assert "revised code" in msg.content and "critique" not in msg.content
    assert prefill.content == CODE_PREFILL


def test_prose_roles_start_a_numbered_list() -> None:
    for role in ("QA", "ARCHITECT", "DEVOPS", "DATA", "SECURITY"):
        messages = build_messages(make(0, role=role))
        assert prefill_of(messages).endswith("\n1.")
    assert ROLE_PREFILLS["QA"] == prefill_of(build_messages(make(0, role="qa")))


def test_a_code_continuation_is_joined_and_its_block_closed() -> None:
    # The embedded server stops at the closing fence and does not return it.
    joined = join_prefill(CODE_PREFILL, "def f(n: int) -> int:\n    return n")
    assert joined == "```python\ndef f(n: int) -> int:\n    return n\n```"
    [block] = extract_code_blocks(joined)
    assert block.code.startswith("def f(")
    # A continuation that closes the block itself is left as it is.
    closed = "def f():\n    pass\n```\nDone."
    assert join_prefill(CODE_PREFILL, closed) == CODE_PREFILL + closed


def test_a_fresh_whole_answer_is_not_glued_to_the_prefill() -> None:
    # A server that ignored continue_final_message answers from scratch with its own block.
    fresh = "Plan: double it.\n\n```python\ndef f(x):\n    return 2 * x\n```"
    assert join_prefill(CODE_PREFILL, fresh) == fresh


def test_a_prose_continuation_gets_a_space_after_a_mid_line_prefill() -> None:
    assert join_prefill("Test cases:\n1.", "empty input\n2. one item") == (
        "Test cases:\n1. empty input\n2. one item"
    )
    assert join_prefill("", "as is") == "as is"
    assert prefill_of([]) == ""


def test_every_role_has_a_prompt_and_unknown_roles_get_one() -> None:
    for role in ("DEV", "QA", "ARCHITECT", "DEVOPS", "DATA"):
        assert role_prompt(role.lower()) == ROLE_PROMPTS[role]
    assert "security" in role_prompt("SECURITY")
