"""Launcher for llama.cpp's server with Fleet's ``fleet-base`` chat format registered first (and
llama.cpp's extra CPU buffer types off: see ``without_extra_buffers``).

Run as ``python -m fleet.embedded._llama_serve <llama_cpp.server args> --chat_format fleet-base``.

Why: the packaged Gemma 3 270M is a *base* (pretrained) model, not an instruction-tuned one.
Wrapped in Gemma's turn markers it echoes the prompt back; given a plain document that ends
where the answer starts, it continues it well. ``fleet-base`` turns an OpenAI chat into such a
document, so agents keep speaking ``/v1/chat/completions`` to the embedded model exactly as they
do to vLLM:

* system, user and earlier assistant messages become plain text blocks separated by blank lines;
* the answer starts after an ``Answer:`` line. If the last message is from the assistant, its
  content is a *prefill*: the prompt ends with it and the model continues it (vLLM's
  ``continue_final_message``; the agents send that flag, llama.cpp ignores unknown fields);
* stop sequences end the answer where a base model would ramble on: a new ``Task:``, Gemma's
  turn markers, and, when the prefill leaves a code fence open, the next fence (the closing one,
  which the caller adds back).

The registry is per process, so the format must be registered in the server's own process: hence
this launcher rather than a flag. Rendering (``render_base_prompt``) is pure and imports nothing
from llama_cpp, so it is testable without the native library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWER_CUE", "CHAT_FORMAT", "BasePrompt", "main", "register", "render_base_prompt"]

CHAT_FORMAT = "fleet-base"
"""The ``--chat_format`` name this launcher registers."""

ANSWER_CUE = "Answer:\n"
"""Where the answer starts. Measured on Gemma 3 270M (DEV Fibonacci, 3 temperatures × 2 seeds):
with it 6/6 code blocks compiled, without it 4/6."""

FENCE = "```"
BASE_STOPS: tuple[str, ...] = ("<end_of_turn>", "<start_of_turn>", "\nTask:")
"""A base model does not know the answer is over: it opens a new turn or invents the next task."""


@dataclass(frozen=True)
class BasePrompt:
    """A chat rendered for a base model."""

    prompt: str
    stop: tuple[str, ...]
    """Stop sequences for this prompt (llama.cpp adds them to the request's own)."""


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


def render_base_prompt(messages: Sequence[Mapping[str, Any]]) -> BasePrompt:
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


def register() -> None:
    """Register ``fleet-base`` with llama-cpp-python's chat handler registry (this process)."""
    from llama_cpp import llama_types
    from llama_cpp.llama_chat_format import (
        ChatFormatterResponse,
        LlamaChatCompletionHandlerRegistry,
        chat_formatter_to_chat_completion_handler,
    )

    def format_fleet_base(
        messages: list[llama_types.ChatCompletionRequestMessage], **_: Any
    ) -> ChatFormatterResponse:
        rendered = render_base_prompt(messages)
        return ChatFormatterResponse(prompt=rendered.prompt, stop=list(rendered.stop))

    # llama_cpp leaves these two untyped (no annotations on a no-argument call).
    registry = LlamaChatCompletionHandlerRegistry()  # type: ignore[no-untyped-call]
    registry.register_chat_completion_handler(
        CHAT_FORMAT, chat_formatter_to_chat_completion_handler(format_fleet_base), overwrite=True
    )


def without_extra_buffers() -> None:
    """Load models without llama.cpp's extra CPU buffer types (weight repacking, AMX).

    Why: on a CPU with AMX (Intel Sapphire Rapids and later) a llama.cpp built for the machine
    (``-march=native``, how pip builds it) places the Q4_K weights in the AMX buffer, and the
    first decode of Gemma 3 then crashes the server in ``ggml_backend_amx_mul_mat`` (SIGSEGV;
    llama-cpp-python 0.3.36). llama-cpp-python's server has no flag for it, so the launcher
    switches ``use_extra_bufts`` off in the default model parameters it builds every model from.
    """
    import llama_cpp.llama_cpp as low_level  # what ``Llama`` builds its model parameters with

    defaults = low_level.llama_model_default_params

    def model_params() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = model_params


def main() -> None:
    """Register the format, then run llama_cpp.server's own CLI on ``sys.argv``."""
    register()
    without_extra_buffers()
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
