"""``fleet approve-plan <plan_id> --story S [--role R …] [--task T …]``: approve a plan, which
starts one deliberation per role (as a ``planning.plan.approved`` message would)."""

from __future__ import annotations

import argparse
import json

from rich.text import Text

from fleet.cli._common import ROLES, Subparsers, add_client_options, client, console, offer


def register(sub: Subparsers) -> None:
    c = sub.add_parser("approve-plan", help="approve a plan: one deliberation per role")
    add_client_options(c)
    c.add_argument("plan_id", help="the plan's id (approving it again changes nothing)")
    c.add_argument("--story", required=True, help="the story the plan belongs to")
    offer(
        c.add_argument(
            "--role",
            action="append",
            default=[],
            metavar="ROLE",
            help="a role (repeat); default set",
        ),
        ROLES,
    )
    c.add_argument("--task", action="append", default=[], help="a task of the plan (repeat)")
    c.add_argument("--description", default="", help="what the plan is about")
    c.add_argument("--approved-by", default="", help="who approved it")
    c.set_defaults(fn=cmd_approve_plan)


async def cmd_approve_plan(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    req = pb.ApprovePlanRequest(
        plan_id=args.plan_id,
        story_id=args.story,
        approved_by=args.approved_by,
        roles=args.role,
        description=args.description,
        tasks=args.task,
    )
    async with client(args) as c:
        resp = await c.stub.ApprovePlan(req, metadata=c._md)
    if args.json:
        out = {"plan_id": resp.plan_id, "task_ids": list(resp.task_ids), "created": resp.created}
        print(json.dumps(out))
        return
    state = "approved" if resp.created else "already approved"
    console.print(Text.assemble("plan ", (resp.plan_id, "bold"), f" {state}; deliberations:"))
    for t in resp.task_ids:
        console.print(Text(f"  {t}"))  # ids carry the client's plan id: text, not markup
    if not resp.task_ids:  # nothing is invented: the plan's events say why
        console.print("  none (no roles named, or none with a council)")
