"""What the NATS agent backend puts on the wire: stream and subject names, and the JSON codec.

Shared by both ends (``runtime`` on the dispatcher side, ``worker`` on the worker side), so
the two cannot disagree about a subject or a field. The codec is generic over the frozen
dataclasses of ``agent_runtime.api``: it follows their type hints, so a field added there
travels with no change here; a field the other end does not know is ignored and a missing one
takes its default (a dispatcher and workers one release apart still understand each other).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from nats.js.api import RetentionPolicy, StorageType, StreamConfig

from natsio.deadletter import DEAD_LETTER_PREFIX
from natsio.streams import checked_replicas

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "KINDS",
    "QueueNames",
    "ResultMessage",
    "WorkMessage",
    "decode",
    "encode",
]

T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")

KINDS = ("turn", "review", "assess")
"""What a piece of work asks for: ``AgentRuntime.run_turn``, ``.review`` or ``.assess``."""

WIRE_VERSION = 1


@dataclass(frozen=True)
class QueueNames:
    """Every stream, subject and consumer name of one installation's agent queue.

    Args:
        namespace: the event stream's name (``FLEET_EVENTS``): installations that share a NATS
            server but not an event stream share nothing here either.
    """

    namespace: str = "FLEET_EVENTS"

    @property
    def _token(self) -> str:
        return self.namespace.lower()

    @property
    def work_stream(self) -> str:
        return f"{self.namespace}_AGENT_WORK"

    @property
    def results_stream(self) -> str:
        return f"{self.namespace}_AGENT_RESULTS"

    @property
    def work_prefix(self) -> str:
        return f"fleet.agents.{self._token}.work"

    @property
    def results_prefix(self) -> str:
        return f"fleet.agents.{self._token}.results"

    def work_subject(self, role: str, kind: str) -> str:
        return f"{self.work_prefix}.{role.upper()}.{kind}"

    def role_filter(self, role: str) -> str:
        return f"{self.work_prefix}.{role.upper()}.>"

    def result_subject(self, kind: str, key: str) -> str:
        # Keys hold ':' and agent ids may hold '.', so the subject carries a digest of the key;
        # the body carries the key itself.
        digest = hashlib.sha256(f"{kind}:{key}".encode()).hexdigest()[:32]
        return f"{self.results_prefix}.{kind}.{digest}"

    def dead_letter_subject(self, role: str) -> str:
        return f"{DEAD_LETTER_PREFIX}.agents.{self._token}.{role.upper()}"

    @staticmethod
    def worker_durable(role: str) -> str:
        """The pull consumer every worker of ``role`` shares (so the role's work is a queue)."""
        return f"agents-{role.upper()}"

    def work_stream_config(self, duplicate_window_s: float, replicas: int = 1) -> StreamConfig:
        return StreamConfig(
            name=self.work_stream,
            subjects=[f"{self.work_prefix}.>"],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=duplicate_window_s,
            num_replicas=checked_replicas(replicas),
        )

    def results_stream_config(self, max_age_s: float, replicas: int = 1) -> StreamConfig:
        return StreamConfig(
            name=self.results_stream,
            subjects=[f"{self.results_prefix}.>"],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=max_age_s,
            duplicate_window=min(120.0, max_age_s),
            allow_direct=True,
            num_replicas=checked_replicas(replicas),
        )


@dataclass(frozen=True)
class WorkMessage:
    """One call for a worker: what to run and by when."""

    kind: str
    key: str
    role: str
    deadline: float
    """Unix time after which nobody waits for the answer (the caller's budget, retries included)."""
    body: dict[str, object]
    """The ``AgentTurn``, ``ReviewInput`` or ``AssessmentInput``, encoded."""
    attempt: str = ""
    """Empty for a call's first queuing; a call queued again because the stored result is a
    failure of an earlier attempt (its caller gone, the deadline it carried passed) names that
    failure's stream sequence, so the new work and its answer are not refused by either
    stream's dedupe as repeats of the failed attempt."""

    @property
    def msg_id(self) -> str:
        """The work's ``Nats-Msg-Id``: one queuing per call and attempt."""
        return f"{self.key}#{self.attempt}" if self.attempt else self.key

    @property
    def deliberation_id(self) -> str:
        """The deliberation the call belongs to (every kind carries one), for logs."""
        return str(self.body.get("deliberation_id") or "")

    def to_bytes(self) -> bytes:
        return _dumps({"v": WIRE_VERSION, **dataclasses.asdict(self)})

    @classmethod
    def from_bytes(cls, data: bytes) -> WorkMessage:
        raw = json.loads(data)
        if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
            raise ValueError(f"not an agent work message: {data[:80]!r}")
        try:
            return cls(
                kind=str(raw["kind"]),
                key=str(raw["key"]),
                role=str(raw["role"]).upper(),
                deadline=float(raw["deadline"]),
                body=dict(raw["body"]),
                attempt=str(raw.get("attempt") or ""),
            )
        except (KeyError, TypeError) as e:  # one error type for every malformed message
            raise ValueError(f"malformed agent work message ({e!r}): {data[:80]!r}") from None


@dataclass(frozen=True)
class ResultMessage:
    """A worker's answer to one call: a body, or the reason there is none."""

    kind: str
    key: str
    ok: bool
    body: object = None
    """The encoded ``TurnResult``/``ReviewResult``, or a list of ``Assessment``."""
    error: str = ""
    worker: str = ""
    deliveries: int = 1
    dead_lettered: bool = False
    attempt: str = ""
    """The ``WorkMessage.attempt`` this answers."""

    @property
    def msg_id(self) -> str:
        """The result's ``Nats-Msg-Id``: one stored answer per call and attempt."""
        suffix = f"#{self.attempt}" if self.attempt else ""
        return f"result:{self.kind}:{self.key}{suffix}"

    def to_bytes(self) -> bytes:
        return _dumps({"v": WIRE_VERSION, **dataclasses.asdict(self)})

    @classmethod
    def from_bytes(cls, data: bytes) -> ResultMessage:
        raw = json.loads(data)
        if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
            raise ValueError(f"not an agent result message: {data[:80]!r}")
        try:
            return cls(
                kind=str(raw["kind"]),
                key=str(raw["key"]),
                ok=bool(raw["ok"]),
                body=raw.get("body"),
                error=str(raw.get("error") or ""),
                worker=str(raw.get("worker") or ""),
                deliveries=int(raw.get("deliveries") or 1),
                dead_lettered=bool(raw.get("dead_lettered")),
                attempt=str(raw.get("attempt") or ""),
            )
        except (KeyError, TypeError) as e:  # one error type for every malformed message
            raise ValueError(f"malformed agent result message ({e!r}): {data[:80]!r}") from None


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


@typing.overload
def encode(obj: DataclassInstance) -> dict[str, object]: ...
@typing.overload
def encode(obj: list[D] | tuple[D, ...]) -> list[dict[str, object]]: ...
@typing.overload
def encode(obj: object) -> object: ...
def encode(obj: object) -> object:
    """A dataclass (or a list of them) as JSON-ready data."""
    if isinstance(obj, list | tuple):
        return [encode(o) for o in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj


def decode(cls: type[T], data: object) -> T:
    """Rebuild a frozen dataclass of ``agent_runtime.api`` (or a value type) from ``encode``'s
    output, following the class's type hints. Unknown keys are ignored; missing ones default."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    key: Any = cls  # classes hash; mypy's Hashable check does not see it through type[T]
    kwargs = {name: _value(tp, data[name]) for name, tp in _fields(key) if name in data}
    return cls(**kwargs)


@functools.cache
def _fields(cls: type[Any]) -> tuple[tuple[str, Any], ...]:
    # get_type_hints evaluates every annotation string: once per class, not once per message.
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.init)


def _value(tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        return _value(next(a for a in args if a is not type(None)), value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decode(tp, value)
    if origin is tuple:
        inner = args[0] if args else Any
        return tuple(_value(inner, v) for v in value)
    if origin is list:
        inner = args[0] if args else Any
        return [_value(inner, v) for v in value]
    if origin is dict:
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _value(vt, v) for k, v in dict(value).items()}
    if tp in (int, float, str, bool):
        return tp(value)
    return value
