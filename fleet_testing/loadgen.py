"""A LOAD GENERATOR that speaks the OpenAI chat API: for benchmarks and failure tests only.

It is not a model. Its answers are canned text (a short plan and a Python code block), so it must
never be used to claim that deliberation works or that scoring picks good answers; the real
embedded model (``fleet.embedded.llm``) or vLLM is for that. It exists to measure Fleet's own
overhead without a slow model in the way, and to make an endpoint misbehave on purpose.

Modes:

* ``instant``  answers at once (after ``delay_s`` if set). The text is deterministic per
  (``seed``, ``user``/agent, round marker in the prompt): same request, same answer.
* ``hang``     accepts the request and never answers (timeout tests), until ``release_held``.
* ``fail``     HTTP 500 with an OpenAI-style error body.
* ``flaky``    the first ``flaky_failures`` calls get 429 then 503 alternately, then like instant.
* ``think``    like instant, with a ``<think>…</think>`` preamble in ``content`` and a vLLM-style
  ``reasoning_content`` field (reasoning-model stripping).
* ``empty``    HTTP 200 with empty content (the client must call that an error).
* ``overthink`` a reasoning model (Qwen3) whose ``<think>`` block runs past ``max_tokens``: the
  content is an unclosed think block, ``finish_reason`` is ``length`` and no answer comes, unless
  the request turns thinking off with vLLM's ``chat_template_kwargs: {"enable_thinking": false}``
  (then like instant).
* ``judge``    like instant, except that a peer-review request (one that shows ``Proposal X:``
  blocks) is answered with ratings as JSON, each a hash of (``seed``, ``user``, the proposal's
  text): reproducible per seed, different between reviewers, and independent of the labels and
  their order. It makes scores differ between agents so that a ranking can be compared across
  runs; the ratings mean nothing about quality.
* ``scripted`` like instant, except that a request whose messages contain a key of ``script`` is
  answered with that key's text (the first key found, in the mapping's order). For testing a
  harness that grades answers: the test writes the right (or wrong) answer itself.

A request can pick its own mode with a marker ``loadgen:<mode>`` in its ``user`` field or in any
message, so one test can have one agent hang while the others answer (the runtime sends the agent
id as ``user``, so an agent id like ``dev-loadgen:fail-1`` works).

In process::

    async with LoadGenServer(mode="instant") as lg:
        client_url = lg.url                # http://127.0.0.1:<free port>

From a shell: ``python -m fleet_testing.loadgen --port 8001 --mode instant [--delay 0.05]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, cast, get_args

from aiohttp import web

from fleet.embedded._process import LOOPBACK, free_port

__all__ = ["MODES", "LoadGenServer", "Mode", "canned_answer", "judge_rating", "main"]

Mode = Literal[
    "instant", "hang", "fail", "flaky", "think", "empty", "overthink", "judge", "scripted"
]
MODES: tuple[str, ...] = get_args(Mode)
MODEL = "loadgen"


@dataclass
class _Counters:
    calls: int = 0
    answered: int = 0
    failed: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


def canned_answer(seed: int | None, user: str, salt: str = "") -> str:
    """A deterministic proposal with a Python block that compiles and lints clean."""
    h = hashlib.sha256(f"{seed}|{user}|{salt}".encode()).hexdigest()
    k = int(h[:4], 16) % 9 + 2
    name = f"solve_{h[:6]}"
    return (
        f"Plan ({user or 'anonymous'}): scale the input by {k} and validate it.\n\n"
        "```python\n"
        f"def {name}(x: int) -> int:\n"
        "    if x < 0:\n"
        '        raise ValueError("x must be >= 0")\n'
        f"    return x * {k}\n"
        "```\n"
    )


def judge_rating(seed: int | None, user: str, proposal: str) -> int:
    """The ``judge`` mode's rating (1..10) of one proposal: a hash, not a judgement."""
    h = hashlib.sha256(f"{seed}|{user}|{proposal.strip()}".encode()).hexdigest()
    return int(h[:4], 16) % 10 + 1


_PROPOSAL_MARK = re.compile(r"\n\nProposal ([A-P]):\n")
"""Where a labelled proposal starts in a review prompt (``agent_runtime.member.reviews``)."""


def review_proposals(prompt: str) -> dict[str, str]:
    """The labelled proposals of a review prompt: label → text as shown. Each runs to the next
    label; the last to the prompt's final blank line (the ask and the JSON example follow it)."""
    marks = list(_PROPOSAL_MARK.finditer(prompt))
    if not marks:
        return {}
    ends = [m.start() for m in marks[1:]] + [prompt.rfind("\n\n")]
    return {m.group(1): prompt[m.end() : end].strip() for m, end in zip(marks, ends, strict=True)}


def _thinking_off(body: Mapping[str, Any]) -> bool:
    kwargs = body.get("chat_template_kwargs")
    return isinstance(kwargs, Mapping) and kwargs.get("enable_thinking") is False


class LoadGenServer:
    """The load generator as an aiohttp app on a loopback port. Loop affinity: the starting loop.

    Args:
        mode: default behaviour (a request's ``loadgen:<mode>`` marker overrides it).
        delay_s: delay before every answer (all modes but hang).
        spread: each answer's delay is drawn uniformly from ``delay_s × (1 ± spread)`` (0: all
            exactly ``delay_s``). Real model latency varies with the answer's length; a fixed
            delay keeps every deliberation of a closed-loop benchmark in lockstep.
        flaky_failures: how many calls fail in flaky mode before it answers.
        port: a free loopback port when None.
    """

    def __init__(
        self,
        mode: Mode = "instant",
        *,
        delay_s: float = 0.0,
        spread: float = 0.0,
        flaky_failures: int = 2,
        modes_by_user: Mapping[str, Mode] | None = None,
        script: Mapping[str, str] | None = None,
        host: str = LOOPBACK,
        port: int | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        self.mode: Mode = mode
        self.delay_s = delay_s
        if not 0.0 <= spread < 1.0:
            raise ValueError(f"spread must be in [0, 1), got {spread}")
        self.spread = spread
        self.flaky_failures = flaky_failures
        self.modes_by_user: dict[str, Mode] = dict(modes_by_user or {})
        """Per-caller behaviour, keyed by the request's ``user`` (Fleet sends the agent id)."""
        self.script: dict[str, str] = dict(script or {})
        """``scripted`` mode: prompt substring → the answer to send."""
        self.host = host
        self.port = port or free_port(host)
        self.counters = _Counters()
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order (tests inspect what the client sent)."""
        self._flaky_seen = 0
        self._runner: web.AppRunner | None = None
        self._hung: set[asyncio.Future[None]] = set()

    @property
    def url(self) -> str:
        """Base URL for an OpenAI-compatible client (``/v1/chat/completions`` is below it)."""
        return f"http://{self.host}:{self.port}"

    def _delay(self) -> float:
        if not self.spread:
            return self.delay_s
        return self.delay_s * random.uniform(1.0 - self.spread, 1.0 + self.spread)

    async def start(self) -> None:
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()

    async def stop(self) -> None:
        """Stop serving; hung requests are released (their clients see the connection drop)."""
        for fut in self._hung:
            if not fut.done():
                fut.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def release_held(self) -> int:
        """Answer every call that ``hang`` holds now (as instant would); returns how many.

        Set ``mode`` first to say how later calls behave. For tests that keep work open, then
        let it finish when they choose.
        """
        held = [f for f in self._hung if not f.done()]
        for fut in held:
            fut.set_result(None)
        return len(held)

    async def __aenter__(self) -> LoadGenServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- handlers

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    def _mode_for(self, body: dict[str, Any]) -> Mode:
        by_user = self.modes_by_user.get(str(body.get("user") or ""))
        if by_user is not None:
            return by_user
        texts = [str(body.get("user") or "")]
        texts += [
            str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict)
        ]
        for text in texts:
            for mode in MODES:
                if f"loadgen:{mode}" in text:
                    return cast(Mode, mode)
        return self.mode

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        c = self.counters
        c.calls += 1
        c.in_flight += 1
        c.max_in_flight = max(c.max_in_flight, c.in_flight)
        try:
            try:
                body = await request.json()
            except json.JSONDecodeError:
                c.failed += 1
                return _error(400, "body is not JSON")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                c.failed += 1
                return _error(400, "messages missing")
            self.requests.append(body)
            mode = self._mode_for(body)
            if mode == "hang":
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._hung.add(fut)
                try:
                    await fut
                finally:
                    self._hung.discard(fut)
            if self.delay_s > 0:
                await asyncio.sleep(self._delay())
            if mode == "fail":
                c.failed += 1
                return _error(500, "load generator: mode fail")
            if mode == "flaky" and self._flaky_seen < self.flaky_failures:
                self._flaky_seen += 1
                c.failed += 1
                status = 429 if self._flaky_seen % 2 == 1 else 503
                return _error(status, f"load generator: flaky failure {self._flaky_seen}")
            c.answered += 1
            return web.json_response(self._completion(body, mode))
        finally:
            c.in_flight -= 1

    def _completion(self, body: dict[str, Any], mode: Mode) -> dict[str, Any]:
        messages = body["messages"]
        user = str(body.get("user") or "")
        seed = body.get("seed") if isinstance(body.get("seed"), int) else None
        prompt_text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        content = "" if mode == "empty" else canned_answer(seed, user, prompt_text[-64:])
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "stop"
        if mode == "think":
            think = "<think>\nThe user wants a function; keep it small.\n</think>\n"
            message["content"] = think + content
            message["reasoning_content"] = "Separate reasoning, as vLLM's parser sends it."
        elif mode == "overthink" and not _thinking_off(body):
            content, finish = _overthought(body), "length"
            message["content"] = content
        elif mode == "judge" and (shown := review_proposals(prompt_text)):
            content = _ratings(seed, user, shown)
            message["content"] = content
        elif mode == "scripted":
            content = next((a for k, a in self.script.items() if k in prompt_text), content)
            message["content"] = content
        return {
            "id": f"chatcmpl-lg-{self.counters.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(prompt_text.split()),
                "completion_tokens": len(content.split()),
                "total_tokens": len(prompt_text.split()) + len(content.split()),
            },
        }


def _overthought(body: Mapping[str, Any]) -> str:
    """An unclosed think block of ``max_tokens`` words: the budget ran out before any answer."""
    asked = body.get("max_tokens")
    budget = asked if isinstance(asked, int) else 64
    words = ("Let", "me", "think", "about", "this", "step", "by", "step.")
    return "<think>\n" + " ".join(words[i % len(words)] for i in range(max(budget - 1, 1)))


def _ratings(seed: int | None, user: str, shown: Mapping[str, str]) -> str:
    reviews = [
        {"proposal": label, "score": judge_rating(seed, user, text), "critique": "hashed"}
        for label, text in shown.items()
    ]
    return json.dumps({"reviews": reviews})


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "loadgen", "code": status}}
    return web.json_response(body, status=status)


async def _serve(args: argparse.Namespace) -> None:
    server = LoadGenServer(
        args.mode,
        delay_s=args.delay,
        spread=args.spread,
        flaky_failures=args.flaky_failures,
        host=args.host,
        port=args.port,
    )
    await server.start()
    print(f"loadgen ({args.mode}) on {server.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m fleet_testing.loadgen --port P --mode instant``: serve until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(description="OpenAI-compatible load generator (not a model)")
    parser.add_argument("--host", default=LOOPBACK)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--mode", choices=MODES, default="instant")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument(
        "--spread", type=float, default=0.0, help="delay drawn from delay × (1 ± spread)"
    )
    parser.add_argument("--flaky-failures", type=int, default=2)
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
