"""``fleet councils list|create|delete`` and ``fleet agents register|unregister``: the council
RPCs from the shell (the seed's admin calls), with ``--json`` for scripts.

Bad input comes back from the API as INVALID_ARGUMENT naming the field (exit 2) or
FAILED_PRECONDITION (exit 1), as one line on stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TypedDict

from rich.table import Table
from rich.text import Text

from fleet.cli._common import (
    ROLES,
    CliError,
    Subparsers,
    add_client_options,
    client,
    console,
    offer,
)

if TYPE_CHECKING:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb


def _key_value(raw: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{raw!r} is not KEY=VALUE")
    return key.strip(), value


def register(sub: Subparsers) -> None:
    p = sub.add_parser("councils", help="list, create and delete councils (one per role)")
    csub = p.add_subparsers(dest="councils_command", required=True, metavar="ACTION")
    ls = csub.add_parser("list", help="every council and its agents")
    add_client_options(ls)
    offer(
        ls.add_argument("--role", default="", metavar="ROLE", help="only this role's council"),
        ROLES,
    )
    ls.set_defaults(fn=cmd_list)
    create = csub.add_parser("create", help="create a role's council with N agents")
    add_client_options(create)
    offer(create.add_argument("role", metavar="ROLE", help="the council's role"), ROLES)
    create.add_argument("--agents", type=int, default=3, help="how many agents (1-16; 3)")
    create.add_argument("--rounds", type=int, default=1, help="deliberation rounds (1-5; 1)")
    create.add_argument("--no-peer-review", action="store_true", help="agents do not rate peers")
    create.add_argument("--model-profile", default="", help="the agents' model profile")
    create.add_argument("--agent-type", default="", help="MOCK, VLLM or RAY_VLLM (seed's)")
    create.set_defaults(fn=cmd_create)
    delete = csub.add_parser("delete", help="delete a role's council (it can be created again)")
    add_client_options(delete)
    offer(delete.add_argument("role", metavar="ROLE", help="the council's role"), ROLES)
    delete.set_defaults(fn=cmd_delete)

    a = sub.add_parser("agents", help="register or unregister one agent of a council")
    asub = a.add_subparsers(dest="agents_command", required=True, metavar="ACTION")
    reg = asub.add_parser("register", help="an agent joins a role's council")
    add_client_options(reg)
    reg.add_argument("agent_id", help="the new agent's id")
    offer(
        reg.add_argument("--role", required=True, metavar="ROLE", help="the council it joins"),
        ROLES,
    )
    reg.add_argument("--endpoint", default="", help="its OpenAI-compatible URL (council's)")
    reg.add_argument("--model-profile", default="", help="its model profile")
    reg.add_argument(
        "--meta",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="metadata (repeat)",
    )
    reg.set_defaults(fn=cmd_register)
    unreg = asub.add_parser("unregister", help="an agent leaves a role's council")
    add_client_options(unreg)
    unreg.add_argument("agent_id", help="the agent's id")
    offer(
        unreg.add_argument("--role", required=True, metavar="ROLE", help="the council it leaves"),
        ROLES,
    )
    unreg.set_defaults(fn=cmd_unregister)


class _AgentJson(TypedDict):
    agent_id: str
    status: str
    model_profile: str


class _CouncilJson(TypedDict):
    council_id: str
    role: str
    num_agents: int
    status: str
    model: str
    agents: list[_AgentJson]


def _council_json(info: pb.CouncilInfo) -> _CouncilJson:
    return {
        "council_id": info.council_id,
        "role": info.role,
        "num_agents": info.num_agents,
        "status": info.status,
        "model": info.model,
        "agents": [
            {
                "agent_id": a.agent_id,
                "status": a.status,
                "model_profile": a.capabilities.model_profile,
            }
            for a in info.agents
        ],
    }


async def cmd_list(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    req = pb.ListCouncilsRequest(role_filter=args.role, include_agents=True)
    async with client(args) as c:
        resp = await c.stub.ListCouncils(req, metadata=c._md)
    councils = [_council_json(i) for i in resp.councils]
    if args.json:
        print(json.dumps({"councils": councils}))
        return
    if not councils:
        raise CliError(f"no council{' for ' + args.role.upper() if args.role else 's'}")
    table = Table("role", "agents", "status", "members")
    for c_ in councils:
        members = ", ".join(a["agent_id"] for a in c_["agents"])
        table.add_row(c_["role"], str(c_["num_agents"]), c_["status"], Text(members))
    console.print(table)


async def cmd_create(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    req = pb.CreateCouncilRequest(
        role=args.role,
        num_agents=args.agents,
        config=pb.CouncilConfig(
            deliberation_rounds=args.rounds,
            enable_peer_review=not args.no_peer_review,
            model_profile=args.model_profile,
            agent_type=args.agent_type,
        ),
    )
    async with client(args) as c:
        resp = await c.stub.CreateCouncil(req, metadata=c._md)
    if args.json:
        out = {
            "council_id": resp.council_id,
            "agents_created": resp.agents_created,
            "agent_ids": list(resp.agent_ids),
        }
        print(json.dumps(out))
        return
    console.print(
        Text.assemble((args.role.upper(), "bold"), f" council created: {', '.join(resp.agent_ids)}")
    )


async def cmd_delete(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    async with client(args) as c:
        resp = await c.stub.DeleteCouncil(pb.DeleteCouncilRequest(role=args.role), metadata=c._md)
    if args.json:
        out = {"success": resp.success, "agents_removed": resp.agents_removed}
        print(json.dumps(out))
        return
    console.print(Text(resp.message))


async def cmd_register(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    req = pb.RegisterAgentRequest(
        agent_id=args.agent_id,
        role=args.role,
        endpoint=args.endpoint,
        capabilities=pb.AgentCapabilities(model_profile=args.model_profile),
        metadata=dict(args.meta),
    )
    async with client(args) as c:
        resp = await c.stub.RegisterAgent(req, metadata=c._md)
    if args.json:
        out = {"success": resp.success, "council_id": resp.council_id, "message": resp.message}
        print(json.dumps(out))
        return
    console.print(Text(resp.message))


async def cmd_unregister(args: argparse.Namespace) -> None:
    from fleet.orchestrator.v1 import orchestrator_pb2 as pb

    req = pb.UnregisterAgentRequest(agent_id=args.agent_id, role=args.role)
    async with client(args) as c:
        resp = await c.stub.UnregisterAgent(req, metadata=c._md)
    if args.json:
        print(json.dumps({"success": resp.success, "message": resp.message}))
        return
    console.print(Text(resp.message))
