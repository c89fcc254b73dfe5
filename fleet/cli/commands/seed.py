"""``fleet orchestrate``, ``fleet context`` and ``fleet metrics``: the seed's Orchestrate,
GetTaskContext and GetMetrics for people (``--json`` for scripts).

``fleet orchestrate`` is ``fleet deliberate --wait`` with the architect's selection after the
scoring: it prints the winner, how it was chosen and why, and the candidates.
"""

from __future__ import annotations

import argparse
import json

from google.protobuf.json_format import MessageToDict

from fleet.cli._common import (
    PHASES,
    ROLES,
    CliError,
    Subparsers,
    add_client_options,
    add_task_arguments,
    client,
    console,
    offer,
)
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def register(sub: Subparsers) -> None:
    o = sub.add_parser("orchestrate", help="deliberate, then let an architect choose the winner")
    add_client_options(o)
    add_task_arguments(o)
    o.add_argument("--task-id", default="", help="your id for it (idempotent)")
    o.add_argument("--rounds", type=int, default=0, help="rounds (1..5; 0: the council's)")
    o.add_argument("--architect-k", type=int, default=3, help="candidates the architect sees")
    o.add_argument("--no-architect", action="store_true", help="the highest score wins")
    o.add_argument("--no-peer-review", action="store_true", help="agents do not rate each other")
    o.add_argument("--story", default="", help="the story it belongs to (its context is used)")
    o.add_argument("--plan", default="", help="the plan it belongs to")
    o.add_argument(
        "--wait-timeout", type=float, default=900.0, help="give up after this many seconds"
    )
    o.set_defaults(fn=cmd_orchestrate)

    c = sub.add_parser("context", help="the context an agent gets for a task")
    add_client_options(c)
    c.add_argument("task_id", nargs="?", default="", help="the task (or give --story)")
    c.add_argument("--story", default="", help="the story (its context without a task)")
    offer(
        c.add_argument("--role", default="", metavar="ROLE", help="the role the agent plays"), ROLES
    )
    offer(
        c.add_argument("--phase", default="", metavar="PHASE", help="DESIGN, BUILD, TEST or DOCS"),
        PHASES,
    )
    c.add_argument("--max-events", type=int, default=0, help="timeline lines (default 20)")
    c.add_argument("--no-timeline", action="store_true", help="leave out the recent events")
    c.add_argument("--no-decisions", action="store_true", help="leave out the decisions")
    c.set_defaults(fn=cmd_context)

    m = sub.add_parser("metrics", help="performance, agents and councils, from the events")
    add_client_options(m)
    offer(
        m.add_argument(
            "--type", default="all", help="performance, agents, councils or all (default)"
        ),
        ("performance", "agents", "councils", "all"),
    )
    m.add_argument("--since-ms", type=int, default=0, help="only the last N ms (0: all time)")
    m.set_defaults(fn=cmd_metrics)


async def cmd_orchestrate(args: argparse.Namespace) -> None:
    if args.architect_k < 1:
        raise CliError(f"--architect-k: {args.architect_k} must be at least 1", code=2)
    req = pb.OrchestrateRequest(
        task_id=args.task_id,
        task_description=args.task,
        role=args.role,
        story_id=args.story,
        plan_id=args.plan,
        options=pb.OrchestratorOptions(
            enable_peer_review=not args.no_peer_review,
            deliberation_rounds=args.rounds,
            enable_architect_selection=not args.no_architect,
            custom_params={"architect_k": str(args.architect_k)},
        ),
    )
    async with client(args, timeout=args.wait_timeout) as c:
        resp: pb.OrchestrateResponse = await c.stub.Orchestrate(
            req, timeout=args.wait_timeout, metadata=c.call_metadata
        )
    if args.json:
        print(json.dumps(MessageToDict(resp, preserving_proto_field_name=True)))
        return
    tags = resp.metadata.tags
    status = tags.get("status", "")
    if not resp.HasField("winner"):
        raise CliError(f"task {tags.get('task_id', '')} ended {status}: {tags.get('error', '')}")
    w = resp.winner
    console.print(
        f"task [bold]{tags.get('task_id', '')}[/] {status} in {resp.duration_ms} ms: "
        f"winner [bold]{w.proposal.author_id}[/] (score {w.score:.2f})"
    )
    how = tags.get("selection", "")
    if how == "architect":  # model text: printed as text, never as markup
        said = f"chosen by {tags.get('architect_id', '')}: {tags['architect_rationale']}"
        console.print(said, markup=False, highlight=False)
    elif how == "fallback":
        said = f"highest score (the architect gave no choice: {tags['fallback_reason']})"
        console.print(said, markup=False, highlight=False)
    for r in resp.candidates:
        console.print(f"  {r.proposal.author_id}  score {r.score:.2f}", markup=False)
    console.print(w.proposal.content, markup=False, highlight=False)


async def cmd_context(args: argparse.Namespace) -> None:
    if not args.task_id and not args.story:
        raise CliError("give a TASK_ID or --story", code=2)
    req = pb.GetTaskContextRequest(
        task_id=args.task_id,
        story_id=args.story,
        role=args.role,
        phase=args.phase,
        options=pb.ContextOptions(
            include_timeline=not args.no_timeline,
            include_decisions=not args.no_decisions,
            include_summaries=True,
            max_events=args.max_events,
        ),
    )
    async with client(args) as c:
        resp: pb.GetTaskContextResponse = await c.stub.GetTaskContext(
            req, timeout=30.0, metadata=c.call_metadata
        )
    if args.json:
        print(json.dumps(MessageToDict(resp, preserving_proto_field_name=True)))
        return
    console.print(resp.context_text, markup=False, highlight=False)
    console.print(f"[dim]~{resp.token_count} tokens, version {resp.version_hash[:12]}[/]")


async def cmd_metrics(args: argparse.Namespace) -> None:
    req = pb.GetMetricsRequest(metric_type=args.type, time_range_ms=args.since_ms)
    async with client(args) as c:
        resp: pb.GetMetricsResponse = await c.stub.GetMetrics(
            req, timeout=30.0, metadata=c.call_metadata
        )
    data = MessageToDict(
        resp, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    if args.json:
        print(json.dumps(data))
        return
    for section, values in data.items():
        console.print(f"[bold]{section}[/]")
        for key, value in values.items():
            console.print(f"  {key}: {_show(value)}", markup=False)


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_show(v)}" for k, v in sorted(value.items()))
    return str(value)
