"""A NATS URL setting as the server list nats-py connects to.

``NATS_URL`` may name several servers of one cluster, comma-separated
(``nats://a:4222,nats://b:4222``), as the NATS CLI and other clients accept: a process then
starts, and reconnects, while any one of them is up. nats-py takes a list, not such a string,
so every connection Fleet makes goes through ``servers``.
"""

from __future__ import annotations

__all__ = ["servers"]


def servers(url: str) -> list[str]:
    """The servers named in ``url``, in order (one for a plain URL)."""
    named = [u.strip() for u in url.split(",") if u.strip()]
    if not named:
        raise ValueError("no NATS server named (NATS_URL / FLEET_NATS_URL is empty)")
    return named
