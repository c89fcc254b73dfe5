"""The embedded model server (llama.cpp from xllamacpp, real Gemma 3 270M) as an OpenAI client sees
it: the alias in ``/v1/models``, prefilled code continued and closed at the fence, reviews
constrained to JSON, repeatable with a seed, and refusals that say why."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from fleet.embedded.llm import LlamaServer

pytestmark = [pytest.mark.llm, pytest.mark.timeout(300)]

DEV_CHAT = [
    {"role": "system", "content": "You are a senior Python developer."},
    {"role": "user", "content": "Task: Write a Python function that reverses a string."},
    {"role": "assistant", "content": "```python\n"},
]
REVIEW_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["score"],
    "additionalProperties": False,
}


def post(server: LlamaServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{server.api_url}/chat/completions",
        data=json.dumps({"model": server.model_alias, **body}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=240) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_models_lists_the_alias(llm_server: LlamaServer) -> None:
    with urllib.request.urlopen(f"{llm_server.api_url}/models", timeout=5) as resp:
        listed = json.loads(resp.read())
    assert [m["id"] for m in listed["data"]] == ["gemma-3-270m"]


def test_a_prefilled_code_block_is_continued_and_ends_at_its_fence(
    llm_server: LlamaServer,
) -> None:
    body = {"messages": DEV_CHAT, "max_tokens": 160, "temperature": 0.0, "seed": 1}
    status, answer = post(llm_server, body)
    assert status == 200, answer
    [choice] = answer["choices"]
    code = choice["message"]["content"]
    assert answer["model"] == "gemma-3-270m" and answer["usage"]["completion_tokens"] > 0
    assert "def " in code and "```" not in code  # continued the block; the fence is the stop
    assert "senior Python developer" not in code  # not the prompt echoed back
    assert post(llm_server, body)[1]["choices"][0]["message"]["content"] == code  # seed: same


@pytest.mark.parametrize("kind", ["json_object", "json_schema"])
def test_a_review_constrained_to_a_schema_is_json_that_matches_it(
    llm_server: LlamaServer, kind: str
) -> None:
    response_format: dict[str, Any] = (
        {"type": "json_object", "schema": REVIEW_SCHEMA}
        if kind == "json_object"
        else {"type": "json_schema", "json_schema": {"name": "r", "schema": REVIEW_SCHEMA}}
    )
    body = {
        "messages": [{"role": "user", "content": "Rate `def f(s): return s[::-1]` from 0 to 10."}],
        "max_tokens": 40,
        "seed": 2,
        "response_format": response_format,
    }
    status, answer = post(llm_server, body)
    assert status == 200, answer
    review = json.loads(answer["choices"][0]["message"]["content"])
    assert set(review) == {"score"} and 0 <= review["score"] <= 10


def test_a_prompt_over_the_context_is_refused_with_the_reason(llm_server: LlamaServer) -> None:
    status, answer = post(llm_server, {"messages": [{"role": "user", "content": "word " * 3000}]})
    assert status == 400 and "context" in answer["error"]["message"]
    status, answer = post(llm_server, {"messages": DEV_CHAT, "stream": True})
    assert status == 400 and "stream" in answer["error"]["message"]
