"""The web console: an aiohttp app served by the node, next to the gRPC API and behind its token.

It is a client of the same parts the API serves (``ApiServices``), never of the gRPC servicer:
a submit or a cancel calls the commands the RPCs call (``ApiServices.deliberations``), a plan
approval ``application.plans.approve_and_request``, a result or a Cypher query the queries they
call (``ApiServices.queries``), node status, verification and the councils' members the functions
GetNodeStatus, VerifyProjections and ListCouncils answer with (``fleet.grpc.rpc_status``,
``rpc_councils``), all through ``_actions``, which maps their refusals to HTTP statuses once; so a
submit from the browser is validated and recorded exactly as a ``Deliberate`` call is. Reads of one
deliberation fold its events (``application.timeline``), the list pages over the history graph
(``application.listing``), and live updates come from the node's ``WatchHub``. The browser side
is static files (``static/``), no build step: ``index.html``, one script, one stylesheet.

Loop affinity: the node's loop (``start`` and ``close`` on it).
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Any

from aiohttp import web
from google.protobuf.json_format import MessageToDict

from aggregates import InvalidDeliberationError, deliberation_id
from application.errors import NotFoundError, ServiceUnavailableError
from application.plans import approve_and_request
from application.ports import CouncilDirectory
from application.rows import as_int
from fleet.grpc import _mapping
from fleet.grpc._services import ApiServices
from fleet.grpc.rpc_councils import list_councils
from fleet.grpc.rpc_status import node_status, verify
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.web import _live, _present, _vocabulary
from fleet.web._actions import act
from fleet.web._requests import int_param, json_body, list_filter, new_deliberation, plan_approval
from fleet.web._security import Handler, error, security_headers, token_check

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
VERIFY_BUDGET_S = 60.0
"""How long the console's verify may take (an RPC's deadline sizes it; a page has none)."""
DEFAULT_PORT = 8470
COUNTS = """
MATCH (d:Deliberation) WHERE d.created_at IS NOT NULL
RETURN d.status AS status, d.role AS role, count(d) AS n
"""
FAILURES = """
MATCH (d:Deliberation)-[:HAD_EVENT]->(e:Event)
WHERE e.type = 'AgentFailed'
RETURN d.task_id AS task_id, d.role AS role, e.agent_id AS agent_id, e.at AS at,
       e.detail AS error
ORDER BY at DESC
LIMIT 50
"""
PLANS = """
MATCH (d:Deliberation) WHERE d.plan_id IS NOT NULL AND d.plan_id <> ''
RETURN d.plan_id AS plan_id, d.story_id AS story_id, d.role AS role, d.status AS status,
       d.task_id AS task_id, d.winner AS winner, d.created_at AS created_at
ORDER BY created_at DESC
"""


@web.middleware
async def not_found_is_404(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The one place the console turns "there is no such thing" into a 404. Every other error,
    a ``KeyError`` among them, is a bug and answers 500."""
    try:
        return await handler(request)
    except NotFoundError as e:
        return error(404, str(e))


class WebConsole:
    """The console's HTTP server. ``councils`` is optional: without it the page says so."""

    def __init__(
        self,
        services: ApiServices,
        *,
        token: str = "",
        councils: CouncilDirectory | None = None,
    ) -> None:
        self.services = services
        self._councils = councils
        self._token = token
        self._runner: web.AppRunner | None = None
        self.url = ""

    def app(self) -> web.Application:
        app = web.Application(
            middlewares=[security_headers, token_check(self._token), not_found_is_404]
        )
        r = app.router
        r.add_get("/", self._index)
        r.add_static("/static/", STATIC, append_version=False)
        r.add_get("/api/deliberations", self._list)
        r.add_post("/api/deliberations", self._submit)
        r.add_get("/api/deliberations/{task_id}", self._detail)
        r.add_get("/api/deliberations/{task_id}/result", self._result)
        r.add_get("/api/deliberations/{task_id}/calls/{version}", self._call)
        r.add_get("/api/deliberations/{task_id}/stream", self._stream_one)
        r.add_post("/api/deliberations/{task_id}/cancel", self._cancel)
        r.add_get("/api/plans", self._plans)
        r.add_post("/api/plans", self._approve)
        r.add_get("/api/councils", self._list_councils)
        r.add_get("/api/councils/{role}/history", self._council_history)
        r.add_get("/api/agents", self._agents)
        r.add_get("/api/graph/vocabulary", self._vocabulary)
        r.add_get("/api/status", self._status)
        r.add_post("/api/projections/verify", self._verify)
        r.add_post("/api/query", self._query)
        r.add_get("/api/stream", self._stream_all)
        return app

    async def start(
        self, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None
    ) -> str:
        """Listen on ``host:port`` (0: a free port) and return the console's URL."""
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=ssl_context)
        await site.start()
        bound = self._runner.addresses[0][1]
        scheme = "https" if ssl_context else "http"
        self.url = f"{scheme}://{'[' + host + ']' if ':' in host else host}:{bound}/"
        return self.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------------------ pages

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def _list(self, request: web.Request) -> web.Response:
        """One page of ``fleet list``, newest first, with the counts by status and role."""
        listing = self.services.listing
        if listing is None:
            return error(503, "this node does not serve the deliberation list")
        q = request.query
        try:
            f = list_filter(q)
            size = int_param(q, "page_size", 50)
            text = str(q.get("q", "")).strip()
            body: dict[str, Any]
            if text:
                found = await listing.search(f, text)
                body = {"items": [_present.summary_json(s) for s in found.items], "next_token": ""}
                body["more"] = found.more
            else:
                page = await listing.list(f, page_size=size, page_token=q.get("page_token", ""))
                body = {
                    "items": [_present.summary_json(s) for s in page.items],
                    "next_token": page.next_token,
                }
        except InvalidDeliberationError as e:
            return error(400, str(e))
        if q.get("counts", "1") != "0":
            body["counts"] = await self._counts()
        return web.json_response(body)

    async def _counts(self) -> dict[str, dict[str, int]]:
        result = await self.services.queries.cypher(COUNTS, {}, 0)
        by_status: dict[str, int] = {}
        by_role: dict[str, int] = {}
        for row in result.rows:
            n = as_int(row.get("n") or 0)
            s, r = str(row.get("status") or ""), str(row.get("role") or "")
            by_status[s] = by_status.get(s, 0) + n
            by_role[r] = by_role.get(r, 0) + n
        return {"status": by_status, "role": by_role}

    async def _detail(self, request: web.Request) -> web.Response:
        """The deliberation folded to ``?to_version=`` (default: its latest version)."""
        task = request.match_info["task_id"]
        to_version = int_param(request.query, "to_version", 0)
        try:
            full = await self.services.queries.history(task)
            latest = full.entries[-1].version if full.entries else 0
            h = full if not to_version else await self.services.queries.history(task, to_version)
        except InvalidDeliberationError as e:
            return error(400, str(e))
        return web.json_response(_present.detail(h, latest))

    async def _call(self, request: web.Request) -> web.Response:
        """The event at ``version`` as one agent call: its recorded prompt and answer, whole."""
        task = request.match_info["task_id"]
        version = int_param(request.match_info, "version", 0)
        try:
            h = await self.services.queries.history(task, version)
        except InvalidDeliberationError as e:
            return error(400, str(e))
        found = [e for e in h.entries if e.version == version]
        if not found:
            return error(404, f"{task} has no event at version {version}")
        return web.json_response(_present.call_json(found[0]))

    async def _result(self, request: web.Request) -> web.Response:
        """GetDeliberationResult, as the API answers it (JSON of the proto message)."""
        task = request.match_info["task_id"]

        async def result() -> pb.GetDeliberationResultResponse:
            view = await self.services.queries.result(_mapping.task_id(task))
            return _mapping.result_response(view)

        return await act("GetDeliberationResult", task, result)

    async def _plans(self, request: web.Request) -> web.Response:
        """Plans with their story and their deliberations per role (from the history graph)."""
        result = await self.services.queries.cypher(PLANS, {}, 0)
        plans: dict[str, dict[str, Any]] = {}
        for row in result.rows:
            p = plans.setdefault(
                str(row["plan_id"]),
                {"plan_id": row["plan_id"], "story_id": row.get("story_id") or "", "roles": {}},
            )
            p["roles"].setdefault(str(row.get("role") or ""), []).append(
                {k: row.get(k) or "" for k in ("task_id", "status", "winner", "created_at")}
            )
        return web.json_response({"plans": list(plans.values()), "truncated": result.truncated})

    async def _list_councils(self, request: web.Request) -> web.Response:
        if self._councils is None:
            return web.json_response({"councils": [], "served": False})
        councils = await self._councils.list_councils()
        return web.json_response(
            {"councils": [_present.plain_dataclass(c) for c in councils], "served": True}
        )

    async def _council_history(self, request: web.Request) -> web.Response:
        """The council's events, oldest first: who joined and left it, and when."""
        if self._councils is None:
            return web.json_response({"changes": [], "served": False})
        role = request.match_info["role"]
        try:
            changes = await self._councils.history(role)
        except ValueError as e:  # an unknown role, named
            return web.json_response({"error": f"role: {e}"}, status=400)
        return web.json_response(
            {"changes": [_present.plain_dataclass(c) for c in changes], "served": True}
        )

    async def _agents(self, request: web.Request) -> web.Response:
        """Every council with its members and what each is doing (ListCouncils, whose
        ``AgentInfo.status`` says idle, busy or failing), and the latest failed agent calls
        from the history graph."""
        try:
            councils = await list_councils(self.services, "", include_agents=True)
        except ServiceUnavailableError as e:
            return error(503, str(e))
        body = MessageToDict(
            councils, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        try:
            failures = await self.services.queries.cypher(FAILURES, {}, 50)
            body["failures"] = [_present.plain(r) for r in failures.rows]
        except Exception as e:  # the councils are still worth showing without a graph
            body["failures_error"] = f"{type(e).__name__}: {e}"
        return web.json_response(body)

    async def _vocabulary(self, request: web.Request) -> web.Response:
        return web.json_response(_vocabulary.vocabulary())

    async def _status(self, request: web.Request) -> web.Response:
        return await act("GetNodeStatus", "", lambda: node_status(self.services))

    async def _query(self, request: web.Request) -> web.Response:
        """QueryHistory: read-only Cypher with its guard, row and time limits."""
        body = await json_body(request)
        params = body.get("params") or {}
        if not isinstance(params, dict):
            return error(400, "params: must be a JSON object")
        cypher = str(body.get("cypher", ""))
        limit = int_param(body, "limit", 0)

        async def query() -> pb.QueryHistoryResponse:
            q = await self.services.queries.cypher(
                cypher, {str(k): v for k, v in params.items()}, limit
            )
            return _mapping.query_response(q)

        return await act("QueryHistory", "", query)

    # ---------------------------------------------------------------------------- actions

    async def _submit(self, request: web.Request) -> web.Response:
        new = new_deliberation(await json_body(request))

        async def submit() -> pb.DeliberateResponse:
            stored, _ = await self.services.deliberations.submit(new)
            return _mapping.deliberate_response(stored)

        return await act("Deliberate", new.task_id, submit)

    async def _cancel(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        task, reason = request.match_info["task_id"], str(body.get("reason") or "")

        async def cancel() -> pb.CancelDeliberationResponse:
            return _mapping.cancel_response(await self.services.deliberations.cancel(task, reason))

        return await act("CancelDeliberation", task, cancel)

    async def _approve(self, request: web.Request) -> web.Response:
        approval = plan_approval(await json_body(request))
        s = self.services

        async def approve() -> pb.ApprovePlanResponse:
            plan, created = await approve_and_request(
                s.store, approval, s.plan_options, s.clock(), s.councils
            )
            return _mapping.approve_plan_response(plan, created)

        return await act("ApprovePlan", "", approve)

    async def _verify(self, request: web.Request) -> web.Response:
        return await act("VerifyProjections", "", lambda: verify(self.services, VERIFY_BUDGET_S))

    # ------------------------------------------------------------------------------- live

    async def _stream_all(self, request: web.Request) -> web.StreamResponse:
        if self.services.watch is None:
            return error(503, "this node does not serve live events")
        return await _live.stream_all(request, self.services.watch)

    async def _stream_one(self, request: web.Request) -> web.StreamResponse:
        if self.services.watch is None:
            return error(503, "this node does not serve live events")
        task = request.match_info["task_id"]
        try:
            d_id = deliberation_id(task)
            await self.services.store.get(d_id)  # a 404 before the stream opens, not inside it
        except InvalidDeliberationError as e:
            return error(400, str(e))
        return await _live.stream_one(request, self.services.watch, d_id)
