"""Reasoning models: a think block that eats the whole token budget does not lose the answer.

The endpoint is the load generator in ``overthink`` mode, which stands in for Qwen3 on vLLM: it
thinks past ``max_tokens`` (an unclosed ``<think>``, ``finish_reason: length``) unless the
request carries ``chat_template_kwargs: {"enable_thinking": false}``. Through the whole path (the
gRPC API, the dispatcher, the council members: in process, on Ray actors and on NATS workers)
every call is asked once more with thinking off, the deliberation completes, and each proposal
records that it came from that second call (``thinking_retried`` in the history). With
``FLEET_LLM_THINKING=off`` every call asks without thinking from the start: no retry. The real
llama.cpp server with Gemma (marked ``llm``) shows that a server which does not know the field
ignores it: the same answer either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.member.openai_client import ChatMessage, OpenAIChatClient
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.embedded.llm import LlamaServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._node import loadgen_node_settings

pytestmark = pytest.mark.timeout(120)

THINKING_OFF = {"enable_thinking": False}
AGENTS = {
    "in-process": {},
    "ray": {"agent_runtime": "ray"},
    "nats-workers": {"agent_backend": "nats"},
}
"""Where the council members run: each path hands the setting to the client its own way."""


async def deliberate_on_overthink(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    nats_url: str,
    agents: str,
    *,
    rounds: int = 1,
    **settings: Any,
) -> tuple[pb.GetDeliberationResultResponse, list[dict[str, Any]], list[dict[str, Any]]]:
    """One deliberation on an overthinking model: the result, the proposals' events (received
    and revised) as the history shows them, and the requests the model received."""
    if agents == "ray":
        request.getfixturevalue("ray_session")
    async with LoadGenServer("overthink") as endpoint:
        overrides = {**AGENTS[agents], **settings}
        node_settings = loadgen_node_settings(
            tmp_path, nats_url, endpoint.url, vllm_model="qwen3-stand-in", **overrides
        )
        async with FleetNode(node_settings) as node, FleetClient(node.endpoints.grpc) as client:
            task = "Write a function that adds two numbers"
            await client.deliberate(task, task_id="think", rounds=rounds)
            final = await client.wait("think", timeout=30)
            history = await client.history("think")
        sent = list(endpoint.requests)
    proposals = [
        {"type": e.type, **json.loads(e.data_json)}
        for e in history.events
        if e.type in ("ProposalReceived", "ProposalRevised")
    ]
    return final, proposals, sent


def assert_completed_with_code(final: pb.GetDeliberationResultResponse) -> None:
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message
    assert len(final.results) == 3
    assert all("```python" in r.proposal.content for r in final.results)
    assert not any("<think>" in r.proposal.content for r in final.results)


@pytest.mark.parametrize("agents", list(AGENTS))
async def test_a_deliberation_on_an_overthinking_model_completes_and_records_the_retry(
    request: pytest.FixtureRequest, tmp_path: Path, nats_url: str, agents: str
) -> None:
    final, proposals, sent = await deliberate_on_overthink(
        request, tmp_path, nats_url, agents, rounds=2
    )

    assert_completed_with_code(final)
    kinds = sorted(p["type"] for p in proposals)
    assert kinds == ["ProposalReceived"] * 3 + ["ProposalRevised"] * 3
    assert all(p["thinking_retried"] is True for p in proposals)
    # Each call first as the model's default, then once with thinking off: never more.
    first_tries = [r for r in sent if "chat_template_kwargs" not in r]
    retries = [r for r in sent if r.get("chat_template_kwargs") == THINKING_OFF]
    assert len(first_tries) == len(retries) == len(sent) // 2
    assert [r["messages"] for r in first_tries] == [r["messages"] for r in retries]


@pytest.mark.parametrize("agents", list(AGENTS))
async def test_thinking_off_asks_every_call_without_thinking(
    request: pytest.FixtureRequest, tmp_path: Path, nats_url: str, agents: str
) -> None:
    final, proposals, sent = await deliberate_on_overthink(
        request, tmp_path, nats_url, agents, llm_thinking="off"
    )

    assert_completed_with_code(final)
    assert len(proposals) == 3 and not any(p["thinking_retried"] for p in proposals)
    assert sent and all(r.get("chat_template_kwargs") == THINKING_OFF for r in sent)


@pytest.mark.llm
async def test_llama_cpp_ignores_the_thinking_switch(llm_server: LlamaServer) -> None:
    messages = [ChatMessage("user", "Name one primary colour. Answer in one word.")]
    answers = []
    for thinking in ("on", "off"):
        async with OpenAIChatClient(
            llm_server.url, model=llm_server.model_alias, thinking=thinking
        ) as c:
            done = await c.chat(messages, temperature=0.0, seed=1, max_tokens=12, timeout_s=60)
        answers.append(done.content)
    assert answers[0] and answers[0] == answers[1]
