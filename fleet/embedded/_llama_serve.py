"""The embedded model server's process: llama.cpp (from the ``xllamacpp`` wheel) in-process, behind
a small OpenAI chat front that speaks Fleet's ``fleet-base`` prompt format.

Run as ``python -m fleet.embedded._llama_serve --model PATH --host H --port P --alias NAME``
(``fleet.embedded.llm.LlamaServer`` does, as a child process).

Why a front of our own: the packaged Gemma 3 270M is a *base* (pretrained) model, not an
instruction-tuned one. Wrapped in Gemma's turn markers it echoes the prompt back; given a plain
document that ends where the answer starts, it continues it well. The front turns each OpenAI chat
into such a document (``render_base_prompt``) and asks llama.cpp for a plain completion of it, so
agents keep speaking ``/v1/chat/completions`` to the embedded model exactly as they do to vLLM:

* system, user and earlier assistant messages become plain text blocks separated by blank lines;
* the answer starts after an ``Answer:`` line. If the last message is from the assistant, its
  content is a *prefill*: the prompt ends with it and the model continues it (vLLM's
  ``continue_final_message``; the agents send that flag, the front needs no flag for it);
* stop sequences end the answer where a base model would ramble on: a new ``Task:``, Gemma's
  turn markers, and, when the prefill leaves a code fence open, the next fence (the closing one,
  which the caller adds back). They depend on the prefill, which a chat template cannot express:
  hence a front, not a ``--chat-template``.

``response_format`` (``json_object`` with an optional ``schema``, or ``json_schema``) becomes
llama.cpp's ``json_schema`` constraint, as llama.cpp's own chat endpoint maps it; ``seed``,
``temperature``, ``max_tokens`` and llama.cpp's other sampling fields pass through. Generation
runs in llama.cpp's native threads with the GIL released, one request at a time (one slot):
concurrent agents queue behind each other, and ``/v1/models`` still answers meanwhile.

``xllamacpp.Server`` also opens llama.cpp's own HTTP server; it listens on an ephemeral loopback
port that nothing uses (the front calls the engine in-process, not over HTTP).

Rendering and the request/response translation are pure and import nothing native, so they are
testable without the library.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from agent_runtime.cpus import usable_cpus

__all__ = [
    "ANSWER_CUE",
    "BASE_STOPS",
    "BadChatRequest",
    "BasePrompt",
    "chat_response",
    "completion_request",
    "main",
    "models_response",
    "render_base_prompt",
]

ANSWER_CUE = "Answer:\n"
"""Where the answer starts. Measured on Gemma 3 270M (DEV Fibonacci, 3 temperatures × 2 seeds):
with it 6/6 code blocks compiled, without it 4/6."""

FENCE = "```"
BASE_STOPS: tuple[str, ...] = ("<end_of_turn>", "<start_of_turn>", "\nTask:")
"""A base model does not know the answer is over: it opens a new turn or invents the next task."""

CHAT_ONLY_FIELDS = frozenset(
    {
        "messages",
        "model",
        "response_format",
        "max_completion_tokens",
        "stop",
        "stream",
        "stream_options",
        "user",
        "continue_final_message",
        "add_generation_prompt",
        "chat_template",
        "chat_template_kwargs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "guided_json",
    }
)
"""Chat fields the front consumes or drops; every other field goes to llama.cpp as it is."""


class BadChatRequest(ValueError):
    """A chat request the front cannot serve; the message says which field and why (HTTP 400)."""


@dataclass(frozen=True)
class BasePrompt:
    """A chat rendered for a base model."""

    prompt: str
    stop: tuple[str, ...]
    """Stop sequences for this prompt (added to the request's own)."""


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of an OpenAI content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def render_base_prompt(messages: Sequence[Mapping[str, object]]) -> BasePrompt:
    """Render a chat as a completion prompt for a base model.

    Args:
        messages: OpenAI chat messages (``role`` and ``content``).

    Returns:
        The prompt, ending with ``Answer:`` and the prefill when the last message is from the
        assistant (the model continues it), else with ``Answer:`` alone; and the stop sequences,
        including the fence when the prefill leaves a code block open.
    """
    blocks = [_text(m.get("content")).strip() for m in messages]
    prefill = ""
    if messages and messages[-1].get("role") == "assistant":
        # Not stripped: the prefill's trailing newline is where the model starts writing.
        prefill = _text(messages[-1].get("content")).lstrip()
        blocks = blocks[:-1]
    body = "\n\n".join(b for b in blocks if b)
    prompt = (f"{body}\n\n" if body else "") + ANSWER_CUE + prefill
    stop = BASE_STOPS
    if prefill.count(FENCE) % 2 == 1:
        stop = (FENCE, *stop)
    return BasePrompt(prompt, stop)


def _json_schema(response_format: object) -> object | None:
    """llama.cpp's ``json_schema`` for an OpenAI ``response_format`` (None: unconstrained)."""
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise BadChatRequest("response_format must be an object")
    kind = response_format.get("type", "text")
    if kind == "text":
        return None
    if kind == "json_object":  # llama.cpp's own extension: an optional "schema" beside the type
        return response_format.get("schema") or {}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping):
            raise BadChatRequest("response_format json_schema needs a json_schema object")
        return spec.get("schema") or {}
    msg = f"response_format type must be text, json_object or json_schema, not {kind!r}"
    raise BadChatRequest(msg)


def _stops(requested: object) -> list[str]:
    if requested is None:
        return []
    if isinstance(requested, str):
        return [requested]
    if isinstance(requested, list) and all(isinstance(s, str) for s in requested):
        return list(requested)
    raise BadChatRequest("stop must be a string or a list of strings")


def completion_request(chat: Mapping[str, object]) -> dict[str, object]:
    """The llama.cpp completion request that answers an OpenAI chat request.

    Raises:
        BadChatRequest: no ``messages`` list, ``stream`` asked for, a bad ``stop`` or
            ``response_format``.
    """
    messages = chat.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadChatRequest("messages must be a non-empty list of chat messages")
    if not all(isinstance(m, Mapping) for m in messages):
        raise BadChatRequest("each message must be an object with a role and a content")
    if chat.get("stream"):
        raise BadChatRequest("stream is not supported by the embedded server; send stream: false")
    rendered = render_base_prompt(messages)
    request = {k: v for k, v in chat.items() if k not in CHAT_ONLY_FIELDS}
    request["prompt"] = rendered.prompt
    request["stop"] = list(dict.fromkeys([*_stops(chat.get("stop")), *rendered.stop]))
    if "max_tokens" not in request and "max_completion_tokens" in chat:
        request["max_tokens"] = chat["max_completion_tokens"]
    schema = _json_schema(chat.get("response_format"))
    if schema is not None:
        request["json_schema"] = schema
    return request


def chat_response(completion: Mapping[str, Any], model: str) -> dict[str, object]:
    """The OpenAI chat completion for llama.cpp's answer to ``completion_request``.

    ``completion`` is ``Engine.handle_completions``'s answer, hence ``Any`` (xllamacpp is untyped).
    """
    choices = [
        {
            "index": c.get("index", i),
            "message": {"role": "assistant", "content": c.get("text", "")},
            "finish_reason": c.get("finish_reason"),
        }
        for i, c in enumerate(completion.get("choices", []))
    ]
    return {
        "id": completion.get("id") or f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": completion.get("created") or int(time.time()),
        "model": model,
        "choices": choices,
        "usage": completion.get("usage", {}),
    }


def models_response(model: str) -> dict[str, object]:
    """``GET /v1/models``: the one model this server serves, under the alias clients send."""
    entry = {"id": model, "object": "model", "created": 0, "owned_by": "fleet"}
    return {"object": "list", "data": [entry]}


def _error(status: int, message: str, kind: str = "invalid_request_error") -> dict[str, object]:
    return {"error": {"code": status, "message": message, "type": kind}}


class Engine(Protocol):
    """What the front needs of ``xllamacpp.Server``."""

    # Any: xllamacpp ships no types; its request and answer are llama.cpp's JSON, any shape
    def handle_completions(self, request: dict[str, Any]) -> dict[str, Any]: ...


class ChatFront(ThreadingHTTPServer):
    """The OpenAI endpoints on ``(host, port)``, answered by ``engine`` in this process."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], engine: Engine, model: str) -> None:
        super().__init__(address, _Handler)
        self.engine = engine
        self.model = model


class _Handler(BaseHTTPRequestHandler):
    server: ChatFront
    protocol_version = "HTTP/1.1"  # keep-alive: the agents' aiohttp sessions reuse connections

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(HTTPStatus.OK, models_response(self.server.model))
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(HTTPStatus.OK, {"status": "ok"})
        else:
            self._send(HTTPStatus.NOT_FOUND, _error(404, f"no such endpoint: GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(HTTPStatus.NOT_FOUND, _error(404, f"no such endpoint: POST {self.path}"))
            return
        try:
            chat = json.loads(raw)
            if not isinstance(chat, dict):
                raise BadChatRequest("the request body must be a JSON object")
            request = completion_request(chat)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            self._send(HTTPStatus.BAD_REQUEST, _error(400, f"the body is not JSON: {e}"))
            return
        except BadChatRequest as e:
            self._send(HTTPStatus.BAD_REQUEST, _error(400, str(e)))
            return
        try:
            answer = self.server.engine.handle_completions(request)
        except (ValueError, RuntimeError) as e:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, _error(500, str(e), "server_error"))
            return
        error = answer.get("error")
        if isinstance(error, Mapping):  # llama.cpp's own refusal, e.g. a prompt over n_ctx
            self._send(int(error.get("code", 500)), {"error": dict(error)})
            return
        self._send(HTTPStatus.OK, chat_response(answer, self.server.model))

    def _send(self, status: int, body: Mapping[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: one line per request would drown llama.cpp's own log."""


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fleet.embedded._llama_serve")
    parser.add_argument("--model", required=True, help="a GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", required=True, help="the model name clients send")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=usable_cpus())
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Load the model (seconds), then serve the chat front until killed."""
    args = _arguments(argv)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.n_ctx = args.n_ctx
    params.n_parallel = 1  # one slot: a queued request never shares (or cuts short) another's
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # llama.cpp's own HTTP server: an ephemeral loopback port, unused
    engine = xllamacpp.Server(params)
    front = ChatFront((args.host, args.port), engine, args.alias)
    print(f"serving {args.alias} on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    front.serve_forever()


if __name__ == "__main__":
    main()
