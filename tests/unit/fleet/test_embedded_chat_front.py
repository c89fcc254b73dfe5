"""The embedded server's chat front: an OpenAI chat becomes one llama.cpp completion of the
``fleet-base`` document, and the completion comes back as an OpenAI chat answer."""

from __future__ import annotations

import pytest

from fleet.embedded._llama_serve import (
    BASE_STOPS,
    BadChatRequest,
    chat_response,
    completion_request,
    models_response,
    render_base_prompt,
)

PREFILLED = [
    {"role": "system", "content": "You are a senior Python developer."},
    {"role": "user", "content": "Task: reverse a string."},
    {"role": "assistant", "content": "```python\n"},
]
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def test_the_prompt_is_the_rendered_document_and_sampling_passes_through() -> None:
    request = completion_request(
        {
            "model": "gemma-3-270m",
            "messages": PREFILLED,
            "temperature": 0.7,
            "seed": 3,
            "max_tokens": 96,
            "user": "agent-dev-0",
            "continue_final_message": True,
            "add_generation_prompt": False,
            "chat_template_kwargs": {"enable_thinking": False},
            "stream": False,
        }
    )
    rendered = render_base_prompt(PREFILLED)
    assert request == {
        "prompt": rendered.prompt,
        "stop": list(rendered.stop),
        "temperature": 0.7,
        "seed": 3,
        "max_tokens": 96,
    }
    assert request["stop"][0] == "```"  # the open block ends at its closing fence


def test_the_caller_s_stops_come_first_and_are_not_repeated() -> None:
    chat = [{"role": "user", "content": "Plan it."}]
    assert completion_request({"messages": chat, "stop": "\n\n"})["stop"] == ["\n\n", *BASE_STOPS]
    again = completion_request({"messages": chat, "stop": ["\nTask:", "END"]})["stop"]
    assert again == ["\nTask:", "END", "<end_of_turn>", "<start_of_turn>"]


@pytest.mark.parametrize(
    ("response_format", "constraint"),
    [
        ({"type": "json_object", "schema": SCHEMA}, SCHEMA),  # llama.cpp's extension
        ({"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}, SCHEMA),
        ({"type": "json_object"}, {}),  # any JSON value
        ({"type": "text"}, None),
    ],
)
def test_response_format_becomes_llama_cpp_s_json_schema(
    response_format: dict[str, object], constraint: object
) -> None:
    chat = {"messages": PREFILLED[:2], "response_format": response_format}
    assert completion_request(chat).get("json_schema") == constraint


def test_max_completion_tokens_is_read_as_max_tokens() -> None:
    chat = {"messages": PREFILLED[:2], "max_completion_tokens": 40}
    assert completion_request(chat)["max_tokens"] == 40


@pytest.mark.parametrize(
    ("chat", "named"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": ["hello"]}, "message"),
        ({"messages": PREFILLED, "stream": True}, "stream"),
        ({"messages": PREFILLED, "stop": 3}, "stop"),
        ({"messages": PREFILLED, "response_format": {"type": "xml"}}, "'xml'"),
        ({"messages": PREFILLED, "response_format": {"type": "json_schema"}}, "json_schema"),
    ],
)
def test_a_request_the_front_cannot_serve_names_the_field(
    chat: dict[str, object], named: str
) -> None:
    with pytest.raises(BadChatRequest, match=named):
        completion_request(chat)


def test_the_completion_comes_back_as_a_chat_answer_under_the_alias() -> None:
    usage = {"completion_tokens": 12, "prompt_tokens": 30, "total_tokens": 42}
    completion = {
        "id": "cmpl-1",
        "created": 1700000000,
        "model": "/root/.cache/gemma.gguf",
        "choices": [
            {"text": "def rev(s):\n    return s[::-1]\n", "index": 0, "finish_reason": "stop"}
        ],
        "usage": usage,
    }
    answer = chat_response(completion, "gemma-3-270m")
    assert answer == {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gemma-3-270m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "def rev(s):\n    return s[::-1]\n"},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def test_the_models_list_names_the_alias() -> None:
    assert [m["id"] for m in models_response("gemma-3-270m")["data"]] == ["gemma-3-270m"]
