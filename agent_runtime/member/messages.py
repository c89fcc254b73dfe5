"""One message of a chat request: what prompts, reviews and the architect's step build.

Apart from the HTTP client (``openai_client``), which re-exports it, so that building a prompt
does not import aiohttp: the settings (``fleet.config``, through the councils' personas) build on
the prompts, and every ``fleet`` command reads the settings.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChatMessage"]


@dataclass(frozen=True)
class ChatMessage:
    role: str
    """"system", "user" or "assistant"."""
    content: str

    def as_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}
