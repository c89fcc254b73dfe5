"""One council member's work, without Ray: a turn becomes a prompt, a chat call and a TurnResult.

``CouncilMember`` is what each Ray actor holds (see ``ray_runtime.AgentActor``); keeping it free
of Ray lets the same code run in-process (``LocalAgentRuntime``: for tests, benchmarks and a
single-process mode) and keeps the actor a thin shell. Failures become ``AgentTurnError`` with
the turn's key in the message; content is never made up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent_runtime.api import (
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    TurnResult,
)
from agent_runtime.checks import assess_candidates
from agent_runtime.openai_client import ChatClientError, OpenAIChatClient, RetryPolicy
from agent_runtime.prompts import build_messages, join_prefill, prefill_of

__all__ = ["CONTINUE_FINAL_MESSAGE", "CouncilMember", "EndpointConfig", "LocalAgentRuntime"]

CONTINUE_FINAL_MESSAGE: Mapping[str, bool] = {
    "continue_final_message": True,
    "add_generation_prompt": False,
}
"""vLLM's flags for "continue the last assistant message" (the prefill). Sent only with a prefill;
llama.cpp's server ignores them (its ``fleet-base`` format always continues a final prefill)."""


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


class CouncilMember:
    """Runs turns and assessments for any agent of one role. Loop affinity: one event loop.

    Args:
        role: the role this member serves (turns of another role are refused: a routing bug).
        endpoint: the model endpoint; the client opens its session on first use.
    """

    def __init__(self, role: str, endpoint: EndpointConfig) -> None:
        self.role = role.upper()
        self.endpoint = endpoint
        self.client = OpenAIChatClient(
            endpoint.url,
            model=endpoint.model,
            max_in_flight=endpoint.max_in_flight,
            retry=endpoint.retry,
            api_key=endpoint.api_key,
        )
        self.turns_served = 0
        self.turns_failed = 0

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
            completion = await self.client.chat(
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
        )

    def assess(self, request: AssessmentInput) -> list[Assessment]:
        """Executable checks and the skeleton score (``checks.assess_candidates``)."""
        return assess_candidates(request)

    async def close(self) -> None:
        await self.client.close()


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

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        # Checks are pure and role-aware on their own: no member is needed.
        return assess_candidates(request)

    async def close(self) -> None:
        await asyncio.gather(*(m.close() for m in self._members.values()))
