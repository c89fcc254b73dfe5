"""An async client for OpenAI-compatible chat servers (vLLM in production, llama.cpp embedded).

Why our own and not the ``openai`` package: we need exactly one POST, a hard per-call deadline
that covers retries too, a bound on calls in flight per endpoint, and errors that name the URL and
the HTTP status, with no new dependency. aiohttp is already ours.

Behaviour, in one place:

* One ``aiohttp.ClientSession`` per client, created lazily inside the running loop (a session is
  bound to its loop; creating it in ``__init__`` would tie it to whatever loop imported us), and
  closed by ``close()``.
* ``timeout_s`` is the budget of the whole call, retries and back-off included. Each attempt gets
  what is left; a back-off sleep never runs past the deadline.
* Retries on 408/425/429/5xx and on connection errors, with exponential back-off and full jitter
  (AWS's "full jitter": ``uniform(0, min(cap, base * 2**n))``), honouring ``Retry-After`` when the
  server sends one. Any other 4xx is the caller's mistake and fails at once.
* An ``asyncio.Semaphore`` bounds calls in flight on this endpoint; waiting for it counts against
  the call's deadline (a queue that outlives the deadline is a timeout, not a hang).
* Reasoning models (Qwen3, DeepSeek-R1) may return ``<think>…</think>`` inside ``content`` or a
  separate ``reasoning_content``. The answer is what is left after the reasoning is removed; the
  reasoning is kept apart in ``Completion.reasoning``. An answer that is empty after stripping is
  an error (:class:`EmptyCompletionError`): we never fabricate content.
* Thinking (``thinking``, one of :data:`THINKING_MODES`). A reasoning model can spend the whole
  ``max_tokens`` inside ``<think>`` and never answer. ``off`` sends vLLM's per-request switch
  ``chat_template_kwargs: {"enable_thinking": false}`` (Qwen3's chat template then skips the
  think block); ``on`` sends nothing and lets such a call fail (:class:`ThinkingBudgetError`);
  ``auto`` (the default) sends nothing, and when the budget ran out while thinking
  (``finish_reason == "length"``, reasoning and no answer) asks once more with thinking off,
  inside the same deadline and slot, and says so in ``Completion.thinking_retried``. Servers
  that do not know the field ignore it (llama.cpp's, which drops unknown fields); a model
  without thinking never triggers the retry.

Loop affinity: a client belongs to the event loop it is first used on.

Over 400 lines on purpose: the error types, the retry loop, the thinking fallback and the
response parsing describe one HTTP call and are read together (each error is raised by one step
of that call, and the docstring above is their one account); splitting them would scatter that
story.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Final, NotRequired, TypedDict

import aiohttp

from agent_runtime.api import AgentRuntimeError
from agent_runtime.member.messages import ChatMessage
from lifecycle import AsyncClosing

__all__ = [
    "THINKING_MODES",
    "ChatClientError",
    "ChatConnectionError",
    "ChatHTTPError",
    "ChatMessage",
    "ChatRequest",
    "ChatResponseError",
    "ChatTimeoutError",
    "Completion",
    "EmptyCompletionError",
    "OpenAIChatClient",
    "RetryPolicy",
    "ThinkingBudgetError",
    "chat_completions_url",
    "split_reasoning",
]

log = logging.getLogger(__name__)

THINKING_MODES: Final = ("auto", "on", "off")
"""How a client treats a reasoning model's thinking (see the module docstring)."""
_THINKING_OFF: Final = {"enable_thinking": False}
"""vLLM's ``chat_template_kwargs`` that turn Qwen3's (and similar templates') thinking off."""

_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


# --------------------------------------------------------------------------------------- errors


class ChatClientError(AgentRuntimeError):
    """A chat call failed. ``url`` and ``status`` (None when no HTTP answer came) say where/how."""

    def __init__(self, message: str, *, url: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts

    def __reduce__(
        self,
    ) -> tuple[
        Callable[..., ChatClientError], tuple[type[ChatClientError], str, str, int | None, int]
    ]:
        # Keyword-only fields: the default reduce would call cls(message) and fail to unpickle
        # (Ray and multiprocessing pickle exceptions across processes).
        return (_rebuild_error, (type(self), str(self), self.url, self.status, self.attempts))


def _rebuild_error(
    cls: type[ChatClientError], message: str, url: str, status: int | None, attempts: int
) -> ChatClientError:
    return cls(message, url=url, status=status, attempts=attempts)


class ChatHTTPError(ChatClientError):
    """The server answered with an error status (after retries, when the status was retryable)."""


class ChatConnectionError(ChatClientError):
    """No HTTP answer at all: refused, reset, DNS (after retries)."""


class ChatTimeoutError(ChatClientError):
    """The call's deadline passed (waiting for a slot, for the server, or between retries)."""


class ChatResponseError(ChatClientError):
    """The server answered 200 with a body that is not a chat completion."""


class EmptyCompletionError(ChatResponseError):
    """The completion has no answer (empty, or only reasoning). Never replaced by made-up text."""


class ThinkingBudgetError(EmptyCompletionError):
    """The model spent all of ``max_tokens`` thinking and wrote no answer."""


# --------------------------------------------------------------------------------------- values


class ChatRequest(TypedDict):
    """The fields of a chat completion request that the client itself sets; a caller's
    ``extra_body`` adds any other top-level field (the wire body is then a plain JSON object)."""

    model: str
    messages: list[dict[str, str]]
    stream: bool
    temperature: NotRequired[float]
    max_tokens: NotRequired[int]
    seed: NotRequired[int]
    user: NotRequired[str]


@dataclass(frozen=True)
class Completion:
    """One answer, with what it cost."""

    content: str
    """The answer, reasoning removed, stripped of surrounding whitespace; never empty."""
    model: str
    """The model the server says answered (falls back to the requested one)."""
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    """Wall time of the whole call, queueing and retries included, to the nearest ms (not
    truncated: the orchestration overhead is measured against it, and a floor would charge
    half a millisecond of the model's time per call to the orchestrator)."""
    attempts: int
    finish_reason: str = ""
    reasoning: str = ""
    """``reasoning_content`` and/or the text of ``<think>`` blocks, kept apart from the answer."""
    thinking_retried: bool = False
    """The first request spent its whole budget thinking; this answer is from a second one with
    thinking turned off (``thinking="auto"``). ``reasoning`` is then the second one's."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential back-off with full jitter."""

    max_attempts: int = 4
    """Attempts in all (1 = no retry)."""
    base_delay_s: float = 0.2
    max_delay_s: float = 5.0

    def delay(self, retry_no: int, rng: random.Random) -> float:
        """Sleep before retry number ``retry_no`` (0-based): uniform(0, min(cap, base·2ⁿ))."""
        return rng.uniform(0.0, min(self.max_delay_s, self.base_delay_s * (2**retry_no)))


def chat_completions_url(base_url: str) -> str:
    """``http://h:p`` or ``http://h:p/v1`` (with or without a trailing /) → the chat endpoint.

    vLLM's and llama.cpp's docs write the base either way; accept both so ``VLLM_URL`` works as
    the seed configured it.
    """
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


def split_reasoning(text: str) -> tuple[str, str]:
    """Split a model's text into (answer, reasoning).

    Handles closed ``<think>…</think>`` blocks anywhere, a stray ``</think>`` with no opening tag
    (chat templates that put ``<think>`` in the prompt, so only the close comes back: everything
    before it is reasoning), and an unclosed ``<think>`` (the model ran out of tokens while
    thinking: everything after it is reasoning, so the answer may be empty).
    """
    reasoning: list[str] = []

    def _keep(m: re.Match[str]) -> str:
        reasoning.append(m.group(0)[len("<think>") : -len("</think>")].strip())
        return ""

    answer = _THINK_BLOCK.sub(_keep, text)
    close = list(_THINK_CLOSE.finditer(answer))
    if close:
        last = close[-1]
        reasoning.append(answer[: last.start()].strip())
        answer = answer[last.end() :]
    opened = _THINK_OPEN.search(answer)
    if opened:
        reasoning.append(answer[opened.end() :].strip())
        answer = answer[: opened.start()]
    return answer.strip(), "\n".join(r for r in reasoning if r)


# --------------------------------------------------------------------------------------- client


class OpenAIChatClient(AsyncClosing):
    """Chat completions against one OpenAI-compatible endpoint.

    Loop affinity: the session and semaphore belong to the loop of the first call. Safe for many
    concurrent calls on that loop.

    Args:
        base_url: ``http://host:port`` or ``http://host:port/v1``.
        model: model name sent with each request (vLLM checks it; llama.cpp uses its alias).
        max_in_flight: calls on the wire at once from this client; the rest queue.
        retry: back-off policy.
        api_key: sent as a bearer token when given (vLLM ``--api-key``).
        default_timeout_s: deadline of a call that does not pass its own.
        rng: jitter source (pass a seeded one in tests).
        thinking: ``auto``, ``on`` or ``off``: how reasoning models think (module docstring).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        max_in_flight: int = 4,
        retry: RetryPolicy | None = None,
        api_key: str | None = None,
        default_timeout_s: float = 120.0,
        rng: random.Random | None = None,
        thinking: str = "auto",
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if thinking not in THINKING_MODES:
            msg = f"thinking must be one of {', '.join(THINKING_MODES)}, got {thinking!r}"
            raise ValueError(msg)
        self.thinking = thinking
        self.url = chat_completions_url(base_url)
        self.model = model
        self.max_in_flight = max_in_flight
        self.retry = retry or RetryPolicy()
        self.default_timeout_s = default_timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._slots: asyncio.Semaphore | None = None
        self._closed = False

    # -- lifecycle

    def _ensure_open(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        if self._closed:
            raise ChatClientError(f"client for {self.url} is closed", url=self.url)
        if self._session is None or self._session.closed:
            # Our semaphore does the bounding; the connector limit only needs to be no tighter.
            connector = aiohttp.TCPConnector(limit=max(self.max_in_flight, 1) * 2)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_in_flight)
        return self._session, self._slots

    async def close(self) -> None:
        """Close the HTTP session. Idempotent; later calls raise ChatClientError."""
        self._closed = True
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    # -- the call

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout_s: float | None = None,
        user: str | None = None,
        model: str | None = None,
        extra_body: Mapping[str, object] | None = None,
    ) -> Completion:
        """POST one chat completion and return the answer.

        Args:
            messages: the conversation.
            temperature, max_tokens, seed: sampling, sent only when given.
            timeout_s: deadline for the whole call (queueing, attempts, back-off).
            user: OpenAI's end-user field; we send the agent id (servers log it; the load
                generator can key behaviour on it).
            model: overrides the client's model for this call.
            extra_body: extra top-level JSON fields (e.g. vLLM's ``chat_template_kwargs``).

        Raises:
            ChatTimeoutError, ChatHTTPError, ChatConnectionError, ChatResponseError,
            EmptyCompletionError: all ChatClientError, all naming the URL.
        """
        budget = self.default_timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        deadline = started + budget
        request: ChatRequest = {
            "model": model or self.model,
            "messages": [m.as_json() for m in messages],
            "stream": False,
        }
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if seed is not None:
            request["seed"] = seed
        if user:
            request["user"] = user
        body: dict[str, object] = {**request, **(extra_body or {})}
        if self.thinking == "off":
            body = _without_thinking(body)

        session, slots = self._ensure_open()
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                await slots.acquire()
        except TimeoutError:
            msg = f"POST {self.url}: no free slot of {self.max_in_flight} within {budget:.1f} s"
            raise ChatTimeoutError(msg, url=self.url, attempts=0) from None
        try:
            return await self._complete(session, body, started, deadline, budget)
        finally:
            slots.release()

    async def _complete(
        self,
        session: aiohttp.ClientSession,
        body: Mapping[str, object],
        started: float,
        deadline: float,
        budget: float,
    ) -> Completion:
        """The answer to ``body``; in ``auto`` mode, a second request with thinking off when the
        first spent its whole budget thinking (one only: a model that still only thinks fails)."""
        model = str(body["model"])
        payload, attempts = await self._post_with_retries(session, body, deadline, budget)
        try:
            return self._parse(payload, attempts=attempts, started=started, model=model)
        except ThinkingBudgetError as e:
            if self.thinking != "auto":
                raise
            log.warning("%s; asking again with thinking off", e)
        body = _without_thinking(body)
        payload, more = await self._post_with_retries(session, body, deadline, budget)
        done = self._parse(payload, attempts=attempts + more, started=started, model=model)
        return replace(done, thinking_retried=True)

    async def _post_with_retries(
        self,
        session: aiohttp.ClientSession,
        body: Mapping[str, object],
        deadline: float,
        budget: float,
    ) -> tuple[dict[str, object], int]:
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                msg = f"POST {self.url}: timed out after {budget:.1f} s ({attempt - 1} attempts)"
                raise ChatTimeoutError(msg, url=self.url, attempts=attempt - 1)
            retry_after: float | None = None
            try:
                async with session.post(
                    self.url, json=body, timeout=aiohttp.ClientTimeout(total=remaining)
                ) as resp:
                    if resp.status == 200:
                        return await self._read_json(resp, attempt), attempt
                    detail = (await resp.text(errors="replace"))[:300]
                    failure: ChatClientError = ChatHTTPError(
                        f"POST {self.url} -> HTTP {resp.status} (attempt {attempt}): {detail}",
                        url=self.url,
                        status=resp.status,
                        attempts=attempt,
                    )
                    if resp.status not in _RETRY_STATUSES:
                        raise failure
                    retry_after = _retry_after_s(resp.headers.get("Retry-After"))
            except TimeoutError:
                msg = f"POST {self.url}: timed out after {budget:.1f} s (attempt {attempt})"
                raise ChatTimeoutError(msg, url=self.url, attempts=attempt) from None
            except aiohttp.ClientResponseError as e:
                failure = ChatHTTPError(
                    f"POST {self.url} -> HTTP {e.status} (attempt {attempt}): {e.message}",
                    url=self.url,
                    status=e.status,
                    attempts=attempt,
                )
                if e.status not in _RETRY_STATUSES:
                    raise failure from e
            except aiohttp.ClientError as e:
                failure = ChatConnectionError(
                    f"POST {self.url}: {type(e).__name__}: {e} (attempt {attempt})",
                    url=self.url,
                    attempts=attempt,
                )
            if attempt >= self.retry.max_attempts:
                raise failure
            delay = self.retry.delay(attempt - 1, self._rng)
            if retry_after is not None:
                delay = max(delay, min(retry_after, self.retry.max_delay_s))
            if time.monotonic() + delay >= deadline:
                # Sleeping would spend the rest of the budget: report the real failure now.
                raise failure
            await asyncio.sleep(delay)

    async def _read_json(self, resp: aiohttp.ClientResponse, attempt: int) -> dict[str, object]:
        text = await resp.text(errors="replace")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            msg = f"POST {self.url} -> HTTP 200 with a body that is not JSON: {text[:200]!r}"
            raise ChatResponseError(msg, url=self.url, status=200, attempts=attempt) from e
        if not isinstance(data, dict):
            msg = f"POST {self.url} -> HTTP 200 with a JSON {type(data).__name__}, not an object"
            raise ChatResponseError(msg, url=self.url, status=200, attempts=attempt)
        return data

    def _parse(
        self, data: Mapping[str, object], *, attempts: int, started: float, model: str
    ) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            msg = f"POST {self.url} -> HTTP 200 without choices: {json.dumps(data)[:200]}"
            raise ChatResponseError(msg, url=self.url, status=200, attempts=attempts)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        assert isinstance(message, dict)
        raw = message.get("content")
        raw_text = raw if isinstance(raw, str) else ""
        answer, think = split_reasoning(raw_text)
        reasoning_field = message.get("reasoning_content") or message.get("reasoning") or ""
        reasoning = "\n".join(r for r in (str(reasoning_field).strip(), think) if r)
        finish = str(choice.get("finish_reason") or "")
        if not answer:
            why = "only reasoning" if reasoning else "empty content"
            msg = f"POST {self.url} -> HTTP 200 with no answer ({why}, finish_reason={finish!r})"
            # Thinking that ran into max_tokens is the one empty answer a retry can mend.
            budget_spent = bool(reasoning) and finish == "length"
            error = ThinkingBudgetError if budget_spent else EmptyCompletionError
            raise error(msg, url=self.url, status=200, attempts=attempts)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        return Completion(
            content=answer,
            model=str(data.get("model") or model),
            prompt_tokens=_as_int(usage.get("prompt_tokens")),
            completion_tokens=_as_int(usage.get("completion_tokens")),
            latency_ms=round((time.monotonic() - started) * 1000),
            attempts=attempts,
            finish_reason=finish,
            reasoning=reasoning,
        )


def _without_thinking(body: Mapping[str, object]) -> dict[str, object]:
    """``body`` asking the chat template not to think (other template kwargs are kept)."""
    kwargs = body.get("chat_template_kwargs")
    merged = {**(kwargs if isinstance(kwargs, Mapping) else {}), **_THINKING_OFF}
    return {**body, "chat_template_kwargs": merged}


def _as_int(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def _retry_after_s(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(float(value), 0.0)
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    return None
