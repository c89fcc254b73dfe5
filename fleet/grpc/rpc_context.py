"""GetTaskContext: the context an agent needs for a task (``application.task_context``).

The facts come from the read side: the task's deliberation, its plan and the story's phase
changes from the store, and the story's other deliberations from the history graph (those whose
``story_id`` is the story's; without a graph, the plan's own deliberations only). ContextOptions
are honoured: ``include_timeline``, ``include_decisions``, ``include_summaries`` (the plan's
description and tasks), ``max_events`` (0: 20), and ``scopes`` as a filter of the sections
(story, plan, decisions, tools, timeline; none given: all). The budget is
``application.task_context.DEFAULT_TOKEN_BUDGET`` tokens, counted as characters / 4.
"""

from __future__ import annotations

import logging

from aggregates import InvalidDeliberationError, deliberation_id
from application.errors import NotFoundError, ServiceUnavailableError
from application.task_context import SECTIONS, ContextScope, gather_facts, render_context
from fleet.grpc import _mapping
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

log = logging.getLogger(__name__)

STORY_TASKS = (
    "MATCH (d:Deliberation) WHERE d.story_id = $story "
    "RETURN d.task_id AS task_id ORDER BY d.created_at"
)
MAX_RELATED = 50
DEFAULT_MAX_EVENTS = 20


class ContextRpcs:
    services: ApiServices

    async def _story_tasks(self, story_id: str) -> list[str]:
        if not story_id:
            return []
        try:
            q = await self.services.queries.cypher(STORY_TASKS, {"story": story_id}, MAX_RELATED)
        except ServiceUnavailableError:
            return []  # no graph on this node: the plan's deliberations only
        return [str(r["task_id"]) for r in q.rows if r.get("task_id")]

    @translated
    async def GetTaskContext(
        self, request: pb.GetTaskContextRequest, context: Ctx
    ) -> pb.GetTaskContextResponse:
        """INVALID_ARGUMENT naming ``task_id`` when neither it nor ``story_id`` is given (or it
        is malformed), ``options.scopes`` for an unknown scope."""
        records = self.services.records
        if records is None:
            raise ServiceUnavailableError("this node reads no stories or plans")
        task_id = _mapping.task_id(request.task_id) if request.task_id else ""
        if not task_id and not request.story_id.strip():
            raise InvalidDeliberationError("task_id", "give a task_id or a story_id")
        o = request.options
        scopes = frozenset(s.strip().lower() for s in o.scopes if s.strip())
        if scopes - SECTIONS:
            unknown = sorted(scopes - SECTIONS)
            raise InvalidDeliberationError("options.scopes", f"{unknown} not in {sorted(SECTIONS)}")
        opts = o if request.HasField("options") else None
        scope = ContextScope(
            include_timeline=opts.include_timeline if opts else True,
            include_decisions=opts.include_decisions if opts else True,
            include_summaries=opts.include_summaries if opts else True,
            max_events=o.max_events or DEFAULT_MAX_EVENTS,
            sections=scopes,
        )
        story_id = request.story_id.strip()
        if not story_id and task_id:  # the task's own story
            try:
                story_id = (await records.get(deliberation_id(task_id))).story_id
            except NotFoundError:
                story_id = ""
        facts = await gather_facts(
            records,
            role=request.role.strip().upper(),
            task_id=task_id,
            story_id=story_id,
            phase=request.phase.strip().upper(),
            related=await self._story_tasks(story_id),
        )
        c = render_context(facts, scope)
        return pb.GetTaskContextResponse(
            context_text=c.text,
            blocks=pb.ContextBlocks(
                system=c.system, context=c.context, tools=c.tools, history=c.history
            ),
            token_count=c.token_count,
            version_hash=c.version_hash,
        )
