"""The NATS plumbing's error root."""

from __future__ import annotations

__all__ = ["NatsPlumbingError"]


class NatsPlumbingError(Exception):
    """A stream or consumer Fleet needs could not be set up as it must be."""
