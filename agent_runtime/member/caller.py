"""One council member's work, without Ray: a turn becomes a prompt, a chat call and a TurnResult.

``CouncilMember`` is what each Ray actor holds (see ``ray_backend.runtime.AgentActor``) and
what each NATS worker runs; keeping it free of Ray lets the same code run in-process
(``LocalAgentRuntime``: for tests, benchmarks and a single-process mode) and keeps the actor a
thin shell. Failures become ``AgentTurnError`` with the turn's key in the message; content is
never made up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from agent_runtime.api import (
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.checks.sandbox import Sandbox, open_sandbox
from agent_runtime.checks.scoring import assess_candidates
from agent_runtime.member.architect import (
    SELECT,
    choice_reviews,
    parse_choice,
    selection_messages,
    selection_schema,
)
from agent_runtime.member.openai_client import (
    ChatClientError,
    ChatHTTPError,
    OpenAIChatClient,
    RetryPolicy,
)
from agent_runtime.member.prompts import build_messages, join_prefill, prefill_of
from agent_runtime.member.reviews import (
    label_candidates,
    parse_reviews,
    review_messages,
    review_schema,
)

__all__ = [
    "CONTINUE_FINAL_MESSAGE",
    "STRUCTURED_OUTPUT_MODES",
    "CouncilMember",
    "EndpointConfig",
    "LocalAgentRuntime",
    "structured_output_body",
]

STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object", "guided_json", "none")
"""How a review asks the server for JSON matching a schema:

* ``json_schema``  OpenAI's ``response_format: {type: json_schema, json_schema: {…}}`` (vLLM's
  current interface, and OpenAI's);
* ``json_object``  ``response_format: {type: json_object, schema: …}`` (llama.cpp's server);
* ``guided_json``  vLLM's older extra body field;
* ``none``         ask in the prompt only (the tolerant parser reads what comes back).

A server that answers 400 to the constrained request is asked again without it."""


def structured_output_body(mode: str, schema: Mapping[str, object]) -> dict[str, object]:
    """The extra request fields that constrain the answer to ``schema`` in ``mode``."""
    if mode == "json_schema":
        spec = {"name": "peer_reviews", "schema": dict(schema), "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": dict(schema)}}
    if mode == "guided_json":
        return {"guided_json": dict(schema)}
    return {}


CONTINUE_FINAL_MESSAGE: Mapping[str, bool] = {
    "continue_final_message": True,
    "add_generation_prompt": False,
}
"""vLLM's flags for "continue the last assistant message" (the prefill). Sent only with a prefill;
llama.cpp's server ignores them (its ``fleet-base`` format always continues a final prefill)."""


class _ReviewCallOptions(TypedDict):
    """The keyword arguments of a review's ``OpenAIChatClient.chat`` (sent once, maybe twice)."""

    temperature: float
    max_tokens: int | None
    seed: int | None
    timeout_s: float | None
    user: str | None
    model: str | None


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how a council member calls its model. Plain data: it crosses into Ray actors."""

    url: str
    """OpenAI-compatible base URL (``http://host:port`` or ``…/v1``)."""
    model: str
    max_in_flight: int = 4
    """Calls on the wire at once from one member's client."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    api_key: str | None = None
    structured_output: str = "json_schema"
    """One of ``STRUCTURED_OUTPUT_MODES``: how reviews ask for schema-constrained JSON."""
    review_max_tokens: int = 160
    """Tokens for a review answer (short JSON; a small model's runaway string stops here)."""
    thinking: str = "auto"
    """How a reasoning model thinks: ``auto``, ``on`` or ``off`` (``openai_client``'s
    ``THINKING_MODES``; ``FLEET_LLM_THINKING``)."""
    sandbox: str = "auto"
    """Where model code runs: ``auto``, ``bwrap`` or ``off`` (``sandbox.SANDBOX_MODES``;
    ``FLEET_SANDBOX``). The member opens it where it runs (the actor's or worker's process)."""


class CouncilMember:
    """Runs turns and assessments for any agent of one role. Loop affinity: one event loop.

    Args:
        role: the role this member serves (turns of another role are refused: a routing bug).
        endpoint: the model endpoint; the client opens its session on first use.
        sandbox: where candidates' code runs; by default ``open_sandbox(endpoint.sandbox)``,
            probed (one tiny run) and logged once per process, here in the process that will
            run the checks: an actor's or a worker's, never the API's.
    """

    def __init__(self, role: str, endpoint: EndpointConfig, sandbox: Sandbox | None = None) -> None:
        self.role = role.upper()
        self.endpoint = endpoint
        self.sandbox = sandbox if sandbox is not None else open_sandbox(endpoint.sandbox)
        self.client = self._new_client(endpoint.url)
        self._clients: dict[str, OpenAIChatClient] = {endpoint.url: self.client}
        self.turns_served = 0
        self.turns_failed = 0

    def _new_client(self, url: str) -> OpenAIChatClient:
        e = self.endpoint
        return OpenAIChatClient(
            url,
            model=e.model,
            max_in_flight=e.max_in_flight,
            retry=e.retry,
            api_key=e.api_key,
            thinking=e.thinking,
        )

    def client_for(self, url: str) -> OpenAIChatClient:
        """The client of ``url`` (a council member's own endpoint), or the member's default for
        an empty one. One client per URL, kept: each bounds its own calls in flight."""
        if not url:
            return self.client
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = self._new_client(url)
        return client

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        """Prompt the model for one turn.

        The chat ends with an assistant prefill; the result's content is the prefill joined with
        the model's continuation (``prompts.join_prefill``), so it is the whole answer.

        Raises:
            AgentTurnError: the call failed (HTTP status, timeout, empty answer), naming the
                turn's key and the endpoint URL.
        """
        if turn.role.upper() != self.role:
            msg = f"turn {turn.key} is for role {turn.role}, routed to a {self.role} member"
            raise AgentTurnError(msg)
        sampling = turn.sampling
        messages = build_messages(turn)
        prefill = prefill_of(messages)
        try:
            completion = await self.client_for(sampling.endpoint).chat(
                messages,
                temperature=sampling.temperature,
                max_tokens=sampling.max_tokens,
                seed=sampling.seed,
                timeout_s=turn.timeout_s,
                user=turn.agent_id,
                model=sampling.model or None,
                extra_body=CONTINUE_FINAL_MESSAGE if prefill else None,
            )
        except ChatClientError as e:
            self.turns_failed += 1
            raise AgentTurnError(f"turn {turn.key} failed: {e}") from None
        self.turns_served += 1
        return TurnResult(
            agent_id=turn.agent_id,
            round=turn.round,
            content=join_prefill(prefill, completion.content),
            model=completion.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_ms=completion.latency_ms,
            thinking_retried=completion.thinking_retried,
            prompt=tuple((m.role, m.content) for m in messages),
            attempts=completion.attempts,
        )

    async def review(self, request: ReviewInput) -> ReviewResult:
        """Critique or rate peers' proposals (see ``agent_runtime.member.reviews``).

        Structured output is asked for as the endpoint is configured; a 400 to that request
        (a server without the feature) is retried once as a plain request. An answer with no
        usable rating is not an error: its reviews carry ``score=None``, source ``fallback``.

        Raises:
            AgentTurnError: the call failed (naming the review's key).
        """
        if request.role.upper() != self.role:
            msg = f"review {request.key} is for role {request.role}, routed to a {self.role} member"
            raise AgentTurnError(msg)
        labelled = label_candidates(request.deliberation_id, request.candidates)
        if not labelled:
            return ReviewResult(request.agent_id, (), request.sampling.model, 0, 0, 0)
        selecting = request.purpose == SELECT
        if selecting:
            messages = selection_messages(request, labelled)
            schema = selection_schema(list(labelled))
        else:
            messages = review_messages(request, labelled)
            schema = review_schema(list(labelled))
        extra = structured_output_body(self.endpoint.structured_output, schema)
        kwargs = _ReviewCallOptions(
            temperature=0.0,  # a judge should be steady; the seed pins the rest
            max_tokens=self.endpoint.review_max_tokens,
            seed=request.sampling.seed,
            timeout_s=request.timeout_s,
            user=request.agent_id,
            model=request.sampling.model or None,
        )
        try:
            try:
                client = self.client_for(request.sampling.endpoint)
                completion = await client.chat(messages, extra_body=extra or None, **kwargs)
            except ChatHTTPError as e:
                if not extra or e.status != 400:
                    raise
                completion = await client.chat(messages, **kwargs)
        except ChatClientError as e:
            raise AgentTurnError(f"review {request.key} failed: {e}") from None
        if selecting:
            label, note = parse_choice(completion.content, list(labelled))
            reviews = list(choice_reviews(request.agent_id, labelled, label, note))
        else:
            reviews = parse_reviews(completion.content, labelled, reviewer=request.agent_id)
        return ReviewResult(
            agent_id=request.agent_id,
            reviews=tuple(reviews),
            model=completion.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_ms=completion.latency_ms,
        )

    def assess(self, request: AssessmentInput) -> list[Assessment]:
        """Checks and scores (``scoring.assess_candidates``), running DEV candidates in this
        member's sandbox. Blocks while they run: call it off the event loop."""
        return assess_candidates(request, self.sandbox)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()


class LocalAgentRuntime:
    """The AgentRuntime Protocol in this process, no Ray: one CouncilMember per role.

    For tests and benchmarks that want the real client and prompts without actors, and as the
    reference the Ray runtime must agree with. Loop affinity: the loop that calls it.
    """

    def __init__(self, endpoint: EndpointConfig, roles: tuple[str, ...]) -> None:
        self._members = {r.upper(): CouncilMember(r, endpoint) for r in roles}

    def _member(self, role: str) -> CouncilMember:
        try:
            return self._members[role.upper()]
        except KeyError:
            msg = f"no council for role {role!r} (roles: {sorted(self._members)})"
            raise AgentTurnError(msg) from None

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        return await self._member(turn.role).run_turn(turn)

    async def review(self, request: ReviewInput) -> ReviewResult:
        return await self._member(request.role).review(request)

    def precheck(self, request: AssessmentInput) -> None:
        """Nothing to start early: ``assess`` checks on a thread of this process either way."""

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        # Off the loop: DEV candidates run in the sandbox (tens of ms each), and the role
        # checks' linters are processes whose waits must not hold the loop.
        return await asyncio.to_thread(self._member(request.role).assess, request)

    async def close(self) -> None:
        await asyncio.gather(*(m.close() for m in self._members.values()))
