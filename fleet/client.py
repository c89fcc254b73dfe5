"""A small async client of the gRPC API, used by the CLI and the demo (and handy in tests).

Security: ``ClientSecurity`` carries what the server may ask for: the CA that signed the
server's certificate (TLS), a client certificate and key (mTLS) and a bearer token, sent as
``authorization`` metadata on every call.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc
from lifecycle import AsyncClosing

TERMINAL = frozenset(
    {
        pb.DELIBERATION_STATUS_COMPLETED,
        pb.DELIBERATION_STATUS_FAILED,
        pb.DELIBERATION_STATUS_TIMEOUT,
        pb.DELIBERATION_STATUS_CANCELLED,
    }
)


FAILED_AGENTS_TAG = "failed_agents"
"""Result metadata tag: the agents that failed, comma-separated, in the order they failed."""
AGENT_ERROR_TAG = "agent_error."
"""Result metadata tag prefix: ``agent_error.<agent id>`` is "round N: <why>" for that agent."""


def failed_agents(r: pb.GetDeliberationResultResponse) -> list[tuple[str, str]]:
    """(agent id, "round N: <why>") for each agent that failed, from the result's tags."""
    tags = r.metadata.tags
    agents = [a for a in tags.get(FAILED_AGENTS_TAG, "").split(",") if a]
    return [(a, tags.get(f"{AGENT_ERROR_TAG}{a}", "")) for a in agents]


def status_name(status: int) -> str:
    return str(pb.DeliberationStatus.Name(status)).removeprefix("DELIBERATION_STATUS_")


@dataclass(frozen=True)
class ClientSecurity:
    tls: bool = False
    """Speak TLS (implied by any of the files below)."""
    ca_file: Path | None = None
    """PEM CA bundle to verify the server with; None: the system's roots."""
    cert_file: Path | None = None
    """Client certificate (PEM) for mTLS, with ``key_file``."""
    key_file: Path | None = None
    token: str = field(default="", repr=False)
    server_name: str = ""
    """Override the name checked against the server's certificate."""

    @property
    def uses_tls(self) -> bool:
        return self.tls or any((self.ca_file, self.cert_file, self.key_file))

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def channel(self, address: str) -> grpc.aio.Channel:
        if not self.uses_tls:
            return grpc.aio.insecure_channel(address)
        creds = grpc.ssl_channel_credentials(
            root_certificates=self.ca_file.read_bytes() if self.ca_file else None,
            private_key=self.key_file.read_bytes() if self.key_file else None,
            certificate_chain=self.cert_file.read_bytes() if self.cert_file else None,
        )
        options = [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []
        return grpc.aio.secure_channel(address, creds, options=options)


class FleetClient(AsyncClosing):
    def __init__(
        self,
        address: str,
        *,
        timeout: float = 30.0,
        security: ClientSecurity | None = None,
    ) -> None:
        self.address = address
        self._timeout = timeout
        self.security = security or ClientSecurity()
        self._channel = self.security.channel(address)
        self._md = self.security.metadata()
        self.stub = pb_grpc.OrchestratorServiceStub(self._channel)  # type: ignore[no-untyped-call]

    @property
    def channel(self) -> grpc.aio.Channel:
        return self._channel

    @property
    def call_metadata(self) -> tuple[tuple[str, str], ...]:
        """What every call carries (the bearer token, when set): for calls made on ``stub``."""
        return tuple(self._md or ())

    async def deliberate(
        self,
        task: str,
        *,
        role: str = "DEV",
        num_agents: int = 3,
        rounds: int = 0,
        task_id: str = "",
        timeout_seconds: int = 0,
        rubric: str = "",
        requirements: tuple[str, ...] = (),
        acceptance_tests: str = "",
    ) -> pb.DeliberateResponse:
        """Submit a deliberation (``rounds`` 0: the role's council's). ``acceptance_tests``
        (pytest-style Python) travel in ``TaskConstraints.metadata["acceptance_tests"]``, where
        the seed's clients put them."""
        # Here, not at the top: the aggregates take ~0.2 s to import; most commands never submit.
        from aggregates.task_code import ACCEPTANCE_TESTS_KEY

        metadata = {ACCEPTANCE_TESTS_KEY: acceptance_tests} if acceptance_tests else {}
        req = pb.DeliberateRequest(
            task_id=task_id,
            task_description=task,
            role=role,
            num_agents=num_agents,
            rounds=rounds,
            constraints=pb.TaskConstraints(
                timeout_seconds=timeout_seconds,
                rubric=rubric,
                requirements=list(requirements),
                metadata=metadata,
            ),
        )
        resp: pb.DeliberateResponse = await self.stub.Deliberate(
            req, timeout=self._timeout, metadata=self._md
        )
        return resp

    async def stream(
        self, task_id: str, request: pb.DeliberateRequest | None = None
    ) -> AsyncIterator[pb.DeliberationUpdate]:
        """Progress of ``task_id`` (resumed), or of ``request`` (started if new), to its end."""
        req = request or pb.DeliberateRequest(task_id=task_id)
        call = self.stub.StreamDeliberation(req, metadata=self._md)
        async for update in call:
            yield update

    async def list(
        self,
        *,
        status: str = "",
        role: str = "",
        plan_id: str = "",
        created_after_ms: int = 0,
        created_before_ms: int = 0,
        page_size: int = 0,
        page_token: str = "",
    ) -> pb.ListDeliberationsResponse:
        req = pb.ListDeliberationsRequest(
            status=pb.DeliberationStatus.Value(f"DELIBERATION_STATUS_{status.upper()}")
            if status
            else pb.DELIBERATION_STATUS_UNKNOWN,
            role=role,
            plan_id=plan_id,
            created_after_ms=created_after_ms,
            created_before_ms=created_before_ms,
            page_size=page_size,
            page_token=page_token,
        )
        resp: pb.ListDeliberationsResponse = await self.stub.ListDeliberations(
            req, timeout=self._timeout, metadata=self._md
        )
        return resp

    async def cancel(self, task_id: str, reason: str = "") -> pb.CancelDeliberationResponse:
        req = pb.CancelDeliberationRequest(task_id=task_id, reason=reason)
        resp: pb.CancelDeliberationResponse = await self.stub.CancelDeliberation(
            req, timeout=self._timeout, metadata=self._md
        )
        return resp

    async def result(self, task_id: str) -> pb.GetDeliberationResultResponse:
        req = pb.GetDeliberationResultRequest(task_id=task_id)
        resp: pb.GetDeliberationResultResponse = await self.stub.GetDeliberationResult(
            req, timeout=self._timeout, metadata=self._md
        )
        return resp

    async def history(self, task_id: str, to_version: int = 0) -> pb.GetDeliberationHistoryResponse:
        req = pb.GetDeliberationHistoryRequest(task_id=task_id, to_version=to_version)
        resp: pb.GetDeliberationHistoryResponse = await self.stub.GetDeliberationHistory(
            req, timeout=self._timeout, metadata=self._md
        )
        return resp

    async def query(
        self, cypher: str, params: Mapping[str, object] | None = None, limit: int = 0
    ) -> tuple[builtins.list[str], builtins.list[dict[str, Any]], bool]:
        # ``builtins``: this class has a method named ``list``. Rows are Cypher results decoded
        # from JSON: their values' types are the query's, not known here.
        req = pb.QueryHistoryRequest(
            cypher=cypher,
            params_json={k: json.dumps(v) for k, v in (params or {}).items()},
            limit=limit,
        )
        resp: pb.QueryHistoryResponse = await self.stub.QueryHistory(
            req, timeout=self._timeout, metadata=self._md
        )
        return list(resp.columns), [json.loads(r) for r in resp.rows_json], resp.truncated

    async def wait(
        self,
        task_id: str,
        *,
        timeout: float,
        poll_s: float = 0.25,
        on_update: Callable[[pb.GetDeliberationResultResponse], None] | None = None,
    ) -> pb.GetDeliberationResultResponse:
        """Poll until a terminal status (or raise TimeoutError naming the task)."""
        deadline = time.monotonic() + timeout
        while True:
            r = await self.result(task_id)
            if on_update:
                on_update(r)
            if r.status in TERMINAL:
                return r
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"task {task_id} still {status_name(r.status)} after {timeout} s"
                )
            await asyncio.sleep(poll_s)

    async def close(self) -> None:
        await self._channel.close()
