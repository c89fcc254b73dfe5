"""One agent turn (and where the agents' checks run) asked of another Fleet process over NATS
request/reply, for a process that runs no agents itself.

Why: DeriveSubtasks asks each role's council for a task list, one turn each, and the API
answers it. Where the API runs without agents (an API replica, ``fleet up --components api``, as
``deploy/`` runs it; or a node's API in a process of its own, ``FLEET_API_PROCESS=child``), it
had nothing to ask and answered UNAVAILABLE. A process that runs the agents (the dispatcher's)
now serves turns on the NATS connection every Fleet process has: no port, nothing to discover
(the subject is named after the event stream), and any one of several such processes answers
(a queue group). The same process says whether its sandbox can start, so that the API's GetStatus
tells the truth about DEV checks that would not run ("degraded") wherever the API runs.

Wire: subjects ``fleet.agents.<stream>.turn`` and ``.sandbox``, queue group
``fleet-agent-turns``. A turn's request is the ``AgentTurn``, the reply ``{"ok": TurnResult}``
or ``{"error": message}``, JSON as the work queue carries them (``_wire``); ``sandbox`` answers
``{"ok": SandboxState}`` (``null`` where the process does not know). What the serving runtime
raises (its ``AgentRuntimeError`` or a timeout) comes back as ``AgentTurnError`` with its
message; so does "no process serves turns" (NATS answers "no responders" at once) and no answer
within the turn's time limit.

Loop affinity: the service and the client live on the loop of their NATS connection.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from agent_runtime.api import AgentRuntimeError, AgentTurn, AgentTurnError, TurnResult, TurnRunner
from agent_runtime.checks.sandbox import SandboxState
from agent_runtime.nats_backend._wire import decode, encode
from natsio import Responder

__all__ = ["RemoteTurns", "TurnService", "agents_subject", "turn_subject"]

log = logging.getLogger(__name__)

QUEUE_GROUP = "fleet-agent-turns"
REPLY_SLACK_S = 5.0
"""A turn's reply may take its time limit plus this (the round trip, a busy serving process)."""
SANDBOX_TIMEOUT_S = 2.0
"""How long GetStatus's probe waits for the agents' process to say where its checks run."""


def agents_subject(stream: str, op: str) -> str:
    return f"fleet.agents.{stream}.{op}"


def turn_subject(stream: str) -> str:
    return agents_subject(stream, "turn")


class TurnService:
    """Runs the turns other processes ask for on this process's agents.

    Each request runs in a task of its own: a turn is a model call, seconds long, and many may
    be asked at once.
    """

    def __init__(
        self,
        nc: NATS,
        stream: str,
        runtime: TurnRunner,
        sandbox: Callable[[], SandboxState | None] = lambda: None,
    ) -> None:
        self._nc = nc
        self._stream = stream
        self._runtime = runtime
        self._sandbox = sandbox
        self._responder = Responder(nc, agents_subject(stream, "*"), QUEUE_GROUP, self._answer)

    async def start(self) -> None:
        await self._responder.start()  # subscribed at the server before anyone asks
        log.info("serving agent turns for %s on %s", self._stream, self._responder.subject)

    async def close(self) -> None:
        """Stop taking turns and end those in flight (their askers time out). Idempotent."""
        await self._responder.close()

    async def _answer(self, msg: Msg) -> None:
        payload: dict[str, object]
        if msg.subject.rsplit(".", 1)[-1] == "sandbox":
            state = self._sandbox()
            payload = {"ok": encode(state) if state is not None else None}
        elif msg.subject != turn_subject(self._stream):
            payload = {"error": f"no agents request {msg.subject!r}"}
        else:
            payload = await self._turn(msg)
        if msg.reply:
            await self._nc.publish(msg.reply, json.dumps(payload).encode())

    async def _turn(self, msg: Msg) -> dict[str, object]:
        payload: dict[str, object]
        try:
            turn = decode(AgentTurn, json.loads(msg.data))
        except (ValueError, TypeError) as e:  # not JSON, not an object, or a field missing
            payload = {"error": f"malformed agent turn: {e}"}
        else:
            try:
                payload = {"ok": encode(await self._runtime.run_turn(turn))}
            except (AgentRuntimeError, TimeoutError) as e:
                payload = {"error": str(e) or type(e).__name__}
            except Exception as e:
                log.exception("agent turn %s of %s failed", turn.agent_id, turn.deliberation_id)
                payload = {"error": f"{type(e).__name__} in the serving process (see its log)"}
        return payload


class RemoteTurns:
    """``TurnRunner`` on the agents of whichever process serves turns for ``stream``."""

    def __init__(self, nc: NATS, stream: str) -> None:
        self._nc = nc
        self._stream = stream

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        to = turn_subject(self._stream)
        timeout = turn.timeout_s + REPLY_SLACK_S
        try:
            msg = await self._nc.request(to, json.dumps(encode(turn)).encode(), timeout=timeout)
        except nats.errors.NoRespondersError:
            raise AgentTurnError(
                f"no Fleet process runs agents for stream {self._stream} (nothing listens on "
                f"{to}): start one with `fleet up --components dispatcher`"
            ) from None
        except nats.errors.TimeoutError:
            raise AgentTurnError(
                f"no agent turn answer within {timeout:g} s from the process serving {to}"
            ) from None
        reply = json.loads(msg.data)
        if "error" in reply:
            raise AgentTurnError(str(reply["error"]))
        return decode(TurnResult, reply["ok"])

    async def sandbox(self) -> SandboxState | None:
        """Where the agents' checks run, as the process serving turns found it; None when no
        process answers in time or it does not know."""
        to = agents_subject(self._stream, "sandbox")
        try:
            msg = await self._nc.request(to, b"", timeout=SANDBOX_TIMEOUT_S)
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            return None
        state = json.loads(msg.data).get("ok")
        return decode(SandboxState, state) if state is not None else None
