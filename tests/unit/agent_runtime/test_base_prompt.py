"""The embedded server's ``fleet-base`` format continues the prefill that ``build_messages`` ends
with: the contract between the agents' chat and the base model behind the embedded server."""

from __future__ import annotations

from agent_runtime.api import AgentTurn, Sampling
from agent_runtime.member.prompts import CODE_PREFILL, build_messages
from fleet.embedded._llama_serve import ANSWER_CUE, BASE_STOPS, render_base_prompt


def test_a_dev_turn_renders_as_a_document_ending_in_the_open_code_block() -> None:
    turn = AgentTurn("d", "a", "DEV", 0, "Reverse a string.", sampling=Sampling(persona="P."))
    messages = [m.as_json() for m in build_messages(turn)]
    rendered = render_base_prompt(messages)
    assert rendered.prompt.endswith(f"Give your proposal.\n\n{ANSWER_CUE}{CODE_PREFILL}")
    assert "<start_of_turn>" not in rendered.prompt
    assert rendered.stop == ("```", *BASE_STOPS)  # the block is open: stop at its closing fence


def test_a_prose_prefill_or_none_leaves_the_fence_out_of_the_stops() -> None:
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Plan it."}]
    listed = render_base_prompt([*chat, {"role": "assistant", "content": "Steps:\n1."}])
    assert listed.prompt == f"Be brief.\n\nPlan it.\n\n{ANSWER_CUE}Steps:\n1."
    assert listed.stop == BASE_STOPS
    bare = render_base_prompt(chat)
    assert bare.prompt == f"Be brief.\n\nPlan it.\n\n{ANSWER_CUE}" and bare.stop == BASE_STOPS


def test_content_parts_and_earlier_answers_are_plain_text() -> None:
    rendered = render_base_prompt(
        [
            {"role": "user", "content": [{"type": "text", "text": "Q1"}, {"type": "image_url"}]},
            {"role": "assistant", "content": "A1"},
            {"role": "user", "content": "Q2"},
        ]
    )
    assert rendered.prompt == f"Q1\n\nA1\n\nQ2\n\n{ANSWER_CUE}"
