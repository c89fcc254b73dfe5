"""What the servicer's methods work with: one frozen bundle, built by ``fleet/bootstrap.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from application.stores import ApplicationDeliberationStore
from fleet.queries import DeliberationQueries


def _utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True)
class ApiServices:
    store: ApplicationDeliberationStore
    queries: DeliberationQueries
    default_timeout_s: int
    clock: Callable[[], datetime] = field(default=_utc_now)
    extras: dict[str, Any] = field(default_factory=dict)
    """Parts later RPCs need (plans, node status, …), by name, so adding one changes no
    constructor signature; each RPC module documents the key it reads."""
