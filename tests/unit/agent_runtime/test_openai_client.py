"""The chat client against the load generator: retries, deadlines, typed errors, reasoning."""

from __future__ import annotations

import random
import time

import pytest

from agent_runtime.member.openai_client import (
    ChatConnectionError,
    ChatHTTPError,
    ChatMessage,
    ChatTimeoutError,
    EmptyCompletionError,
    OpenAIChatClient,
    RetryPolicy,
    ThinkingBudgetError,
    chat_completions_url,
    split_reasoning,
)
from fleet.embedded._process import free_port
from tests.fixtures.llm import LoadGenFactory

MESSAGES = [ChatMessage("user", "Write a function.")]
FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


def client(url: str, **kwargs: object) -> OpenAIChatClient:
    return OpenAIChatClient(
        url, model="m", retry=kwargs.pop("retry", FAST), rng=random.Random(1), **kwargs
    )  # type: ignore[arg-type]


async def test_answer_with_usage_and_sampling(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("instant")
    async with client(lg.url) as c:
        a = await c.chat(MESSAGES, temperature=0.3, max_tokens=50, seed=9, user="agent-1")
        b = await c.chat(MESSAGES, temperature=0.3, max_tokens=50, seed=9, user="agent-1")
    assert "```python" in a.content and a.content == b.content  # deterministic per seed/agent
    assert a.prompt_tokens > 0 and a.completion_tokens > 0 and a.attempts == 1
    assert a.latency_ms >= 0 and a.model == "m"
    sent = lg.requests[0]
    assert (sent["temperature"], sent["max_tokens"], sent["seed"], sent["user"]) == (
        0.3,
        50,
        9,
        "agent-1",
    )


async def test_retries_on_429_and_503_then_succeeds(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("flaky", flaky_failures=3)
    async with client(lg.url) as c:
        done = await c.chat(MESSAGES)
    assert done.attempts == 4 and done.content
    assert lg.counters.calls == 4 and lg.counters.failed == 3


async def test_exhausted_500_names_url_and_status(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("fail")
    async with client(lg.url, retry=RetryPolicy(3, 0.01, 0.02)) as c:
        with pytest.raises(ChatHTTPError) as e:
            await c.chat(MESSAGES)
    assert e.value.status == 500 and e.value.attempts == 3
    assert e.value.url == f"{lg.url}/v1/chat/completions" and e.value.url in str(e.value)
    assert "HTTP 500" in str(e.value)
    assert lg.counters.calls == 3


async def test_hang_times_out_within_the_call_budget(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("hang")
    async with client(lg.url) as c:
        started = time.monotonic()
        with pytest.raises(ChatTimeoutError) as e:
            await c.chat(MESSAGES, timeout_s=0.5)
    assert time.monotonic() - started < 2.0
    assert lg.url in str(e.value)


async def test_backoff_never_sleeps_past_the_deadline(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("flaky", flaky_failures=100)
    slow = RetryPolicy(max_attempts=10, base_delay_s=5.0, max_delay_s=5.0)
    async with OpenAIChatClient(lg.url, model="m", retry=slow, rng=random.Random(3)) as c:
        started = time.monotonic()
        with pytest.raises(ChatHTTPError) as e:
            await c.chat(MESSAGES, timeout_s=1.0)
    # One backoff sleep past the deadline would take 5 s; the margin is for a busy machine.
    assert time.monotonic() - started < 3.0
    assert e.value.status in (429, 503)


async def test_connection_refused_is_typed() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with client(url, retry=RetryPolicy(2, 0.01, 0.01)) as c:
        with pytest.raises(ChatConnectionError) as e:
            await c.chat(MESSAGES, timeout_s=5)
    assert url in str(e.value) and e.value.status is None


async def test_empty_content_is_an_error(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("empty")
    async with client(lg.url) as c:
        with pytest.raises(EmptyCompletionError, match="empty content"):
            await c.chat(MESSAGES)


async def test_think_blocks_are_stripped_not_the_answer(loadgen_factory: LoadGenFactory) -> None:
    lg = await loadgen_factory("think")
    async with client(lg.url) as c:
        done = await c.chat(MESSAGES)
    assert "<think>" not in done.content and done.content.startswith("Plan")
    assert "keep it small" in done.reasoning and "vLLM's parser" in done.reasoning


THINKING_OFF = {"enable_thinking": False}


async def test_auto_asks_again_without_thinking_when_thinking_ate_the_budget(
    loadgen_factory: LoadGenFactory,
) -> None:
    lg = await loadgen_factory("overthink")
    async with client(lg.url) as c:  # thinking="auto" is the default
        done = await c.chat(MESSAGES, max_tokens=40, seed=3, user="agent-1")
    assert done.thinking_retried and done.attempts == 2
    assert done.content.startswith("Plan") and "<think>" not in done.content
    first, second = lg.requests
    assert "chat_template_kwargs" not in first  # a model's own default is tried first
    assert second["chat_template_kwargs"] == THINKING_OFF
    assert (second["max_tokens"], second["seed"], second["user"]) == (40, 3, "agent-1")


async def test_on_lets_a_think_only_answer_fail_with_its_reason(
    loadgen_factory: LoadGenFactory,
) -> None:
    lg = await loadgen_factory("overthink")
    async with client(lg.url, thinking="on") as c:
        with pytest.raises(ThinkingBudgetError, match="only reasoning, finish_reason='length'"):
            await c.chat(MESSAGES, max_tokens=40)
    assert len(lg.requests) == 1


async def test_off_turns_thinking_off_in_every_request_keeping_other_kwargs(
    loadgen_factory: LoadGenFactory,
) -> None:
    lg = await loadgen_factory("overthink")
    async with client(lg.url, thinking="off") as c:
        done = await c.chat(
            MESSAGES, extra_body={"chat_template_kwargs": {"custom": 1}, "top_k": 5}
        )
    assert done.content.startswith("Plan") and not done.thinking_retried
    (sent,) = lg.requests
    assert sent["chat_template_kwargs"] == {"custom": 1, **THINKING_OFF} and sent["top_k"] == 5


async def test_auto_retries_only_for_thinking_not_for_an_empty_answer(
    loadgen_factory: LoadGenFactory,
) -> None:
    lg = await loadgen_factory("empty")
    async with client(lg.url) as c:
        with pytest.raises(EmptyCompletionError) as e:
            await c.chat(MESSAGES)
    assert type(e.value) is EmptyCompletionError and len(lg.requests) == 1
    lg = await loadgen_factory("instant")
    async with client(lg.url) as c:
        assert not (await c.chat(MESSAGES)).thinking_retried
    assert "chat_template_kwargs" not in lg.requests[0]  # servers see what they always saw


def test_an_unknown_thinking_mode_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="thinking must be one of auto, on, off, got 'maybe'"):
        OpenAIChatClient("http://127.0.0.1:1", model="m", thinking="maybe")


async def test_in_flight_is_bounded(loadgen_factory: LoadGenFactory) -> None:
    import asyncio

    lg = await loadgen_factory("instant", delay_s=0.05)
    async with client(lg.url, max_in_flight=2) as c:
        await asyncio.gather(*(c.chat(MESSAGES) for _ in range(8)))
    assert lg.counters.max_in_flight <= 2 and lg.counters.answered == 8


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("plain answer", "plain answer", ""),
        ("<think>hmm</think>\n\nThe answer.", "The answer.", "hmm"),
        ("<THINK>a</THINK>x<think>b</think>y", "xy", "a\nb"),
        ("reasoning with no open tag</think>answer", "answer", "reasoning with no open tag"),
        ("<think>ran out of tokens while thinking", "", "ran out of tokens while thinking"),
        ("answer first <think>then cut", "answer first", "then cut"),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str) -> None:
    assert split_reasoning(text) == (answer, reasoning)


def test_chat_url_accepts_both_bases() -> None:
    want = "http://h:1/v1/chat/completions"
    for base in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/", want):
        assert chat_completions_url(base) == want


def test_errors_survive_pickling() -> None:
    import pickle

    e = ChatHTTPError("POST u -> HTTP 503", url="u", status=503, attempts=2)
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), str(back), back.url, back.status, back.attempts) == (
        ChatHTTPError,
        "POST u -> HTTP 503",
        "u",
        503,
        2,
    )
