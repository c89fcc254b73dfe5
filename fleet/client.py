"""A small async client of the gRPC API, used by the CLI and the demo (and handy in tests)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import grpc

from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc

TERMINAL = frozenset(
    {
        pb.DELIBERATION_STATUS_COMPLETED,
        pb.DELIBERATION_STATUS_FAILED,
        pb.DELIBERATION_STATUS_TIMEOUT,
        pb.DELIBERATION_STATUS_CANCELLED,
    }
)


def status_name(status: int) -> str:
    return str(pb.DeliberationStatus.Name(status)).removeprefix("DELIBERATION_STATUS_")  # type: ignore[arg-type]


class FleetClient:
    def __init__(self, address: str, *, timeout: float = 30.0) -> None:
        self.address = address
        self._timeout = timeout
        self._channel = grpc.aio.insecure_channel(address)
        self.stub = pb_grpc.OrchestratorServiceStub(self._channel)

    async def deliberate(
        self,
        task: str,
        *,
        role: str = "DEV",
        num_agents: int = 3,
        rounds: int = 1,
        task_id: str = "",
        timeout_seconds: int = 0,
        rubric: str = "",
        requirements: tuple[str, ...] = (),
    ) -> pb.DeliberateResponse:
        req = pb.DeliberateRequest(
            task_id=task_id,
            task_description=task,
            role=role,
            num_agents=num_agents,
            rounds=rounds,
            constraints=pb.TaskConstraints(
                timeout_seconds=timeout_seconds, rubric=rubric, requirements=list(requirements)
            ),
        )
        resp: pb.DeliberateResponse = await self.stub.Deliberate(req, timeout=self._timeout)
        return resp

    async def result(self, task_id: str) -> pb.GetDeliberationResultResponse:
        req = pb.GetDeliberationResultRequest(task_id=task_id)
        resp: pb.GetDeliberationResultResponse = await self.stub.GetDeliberationResult(
            req, timeout=self._timeout
        )
        return resp

    async def history(self, task_id: str, to_version: int = 0) -> pb.GetDeliberationHistoryResponse:
        req = pb.GetDeliberationHistoryRequest(task_id=task_id, to_version=to_version)
        resp: pb.GetDeliberationHistoryResponse = await self.stub.GetDeliberationHistory(
            req, timeout=self._timeout
        )
        return resp

    async def query(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = 0
    ) -> tuple[list[str], list[dict[str, Any]], bool]:
        req = pb.QueryHistoryRequest(
            cypher=cypher,
            params_json={k: json.dumps(v) for k, v in (params or {}).items()},
            limit=limit,
        )
        resp: pb.QueryHistoryResponse = await self.stub.QueryHistory(req, timeout=self._timeout)
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

    async def __aenter__(self) -> FleetClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
