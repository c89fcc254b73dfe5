"""Done means (issue 19): a client generated from the seed's full proto runs against `fleet up`.

The seed's own ``orchestrator.proto`` (``tests/fixtures/seed/``, written from the seed's contract,
not Fleet's proto) is compiled with grpc_tools.protoc at test time, and a client script that
imports only those generated modules (``tests/fixtures/seed/seed_client.py``, run with ``python
-I``, so nothing of Fleet's is on its path; it reports any Fleet package it imported, and there
must be none) calls every RPC of the seed's service against a real `fleet up` (all its parts
embedded: nats-server, cache, graph; the load generator is the model, its architect and task
split answers scripted). Each answer is read in the seed's shape; Orchestrate's winner is the one
the architect chose, with its rationale; councils created, changed and deleted through the seed
client are exactly the same after a SIGTERM restart and, changed again, after every process of
the node was SIGKILLed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.api import Candidate
from agent_runtime.member.architect import ARCHITECT_ASK
from agent_runtime.member.reviews import label_candidates
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import REPO, FleetProcess
from tests.support.processes import gone
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)

SEED = REPO / "tests" / "fixtures" / "seed"
RATIONALE = "B handles every edge case the task names"
SUBTASKS = '["Parse the ISO date string", "Reject malformed dates with a clear error"]'
SCRIPT = {
    ARCHITECT_ASK: json.dumps({"winner": "B", "rationale": RATIONALE}),
    "Split this approved plan into at most": SUBTASKS,
}
TASK = "Write a Python function that parses ISO 8601 dates"
DONE = "DELIBERATION_STATUS_COMPLETED"
# Settings naming an external server (or a fixed port): unset, so `fleet up` embeds every part
# in its data dir, as on a laptop, and a restart has nothing outside that dir to come back to.
EXTERNAL = ("_URL", "_URI", "RAY_ADDRESS", "FLEET_METRICS_PORT", "FLEET_STREAM")

Call = dict[str, Any]


def generate_seed_stubs(out: Path) -> Path:
    """The seed's proto compiled as its own clients would: into ``out``, nothing else there."""
    out.mkdir()
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{SEED}", f"--python_out={out}",
         f"--grpc_python_out={out}", str(SEED / "orchestrator.proto")],
        check=True,
    )  # fmt: skip
    return out


async def seed_client(gen: Path, address: str, calls: list[Call]) -> list[Call]:
    """Run the calls through the seed's client (a subprocess); return its answers in order."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", str(SEED / "seed_client.py"), str(gen), address,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(json.dumps(calls).encode())
    assert proc.returncode == 0, err.decode()[-3000:]
    report = json.loads(out)
    assert report["fleet_modules"] == [], "the seed client imported Fleet's own code"
    answers: list[Call] = report["responses"]
    for spec, answer in zip(calls, answers, strict=True):
        assert "gave_up_waiting_for" not in answer, (spec, answer)
    return answers


def until_done(task_id: str) -> Call:
    req = {"task_id": task_id}
    return {"rpc": "GetDeliberationResult", "request": req, "until": {"status": DONE},
            "timeout_s": 60}  # fmt: skip


def ok(answer: Call) -> Any:
    assert "error" not in answer, answer
    return answer["response"]


def councils(listing: Any) -> dict[str, list[str]]:
    """role → its agents' ids, from a seed ListCouncilsResponse (as a dict)."""
    return {
        c["role"]: sorted(a["agent_id"] for a in c.get("agents", []))
        for c in listing.get("councils", [])
    }


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the node's embedded servers), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


async def stop_every_process(node: FleetProcess, sig: signal.Signals) -> None:
    """End `fleet up` and each process it started (its embedded servers); wait until none is left.

    SIGTERM goes to `fleet up` alone, which must stop its servers itself. SIGKILL goes to every
    one of them by pid, the servers first, so none gets the chance to stop cleanly.
    """
    assert node.pid is not None
    servers = descendants(node.pid)
    assert servers, "fleet up started no embedded server"
    if sig is signal.SIGTERM:
        node.stop()
        assert node.returncode == 0, node.tail()
    else:
        for pid in servers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.kill()
    await eventually(
        lambda: all(gone(p) for p in servers),
        timeout=30,
        what=f"the node's servers end ({sig.name})",
    )


async def test_a_seed_client_runs_every_rpc_and_its_councils_survive_restarts(
    tmp_path: Path,
) -> None:
    gen = generate_seed_stubs(tmp_path / "seedgen")
    async with LoadGenServer("scripted", script=SCRIPT) as lg:
        settings = {
            "FLEET_GRPC_PORT": str(free_port()),
            "FLEET_WEB_PORT": "0",
            "VLLM_URL": lg.url,
            "VLLM_MODEL": "loadgen",
            "FLEET_AGENT_RUNTIME": "local",
        }
        node = FleetProcess(tmp_path / "node", "all", settings, start=False)
        for name in [k for k in node.env if k not in settings and any(x in k for x in EXTERNAL)]:
            del node.env[name]  # the test's own environment names no server for this node
        node.spawn()
        try:
            address = (await asyncio.to_thread(node.wait_ready, 120))["grpc"]
            await every_rpc_in_the_seeds_shape(gen, address)
            before = ok((await seed_client(gen, address, [LIST]))[0])

            await stop_every_process(node, signal.SIGTERM)
            node.spawn()
            address = (await asyncio.to_thread(node.wait_ready, 120))["grpc"]
            counted = {"status": "healthy", "stats.total_deliberations": "6"}  # history kept too
            after_term, _ = await seed_client(
                gen, address, [LIST, {**STATUS, "until": counted, "timeout_s": 30}]
            )
            assert ok(after_term) == before  # councils, ids and members exactly as left

            # Changed again, then every process of the node SIGKILLed: nothing to flush.
            changed = await seed_client(
                gen,
                address,
                [
                    {"rpc": "DeleteCouncil", "request": {"role": "DEVOPS"}},
                    {
                        "rpc": "RegisterAgent",
                        "request": {"agent_id": "agent-data-9", "role": "DATA"},
                    },
                    LIST,
                ],
            )
            for answer in changed:
                ok(answer)
            before_kill = ok(changed[-1])
            await stop_every_process(node, signal.SIGKILL)
            node.spawn()
            address = (await asyncio.to_thread(node.wait_ready, 120))["grpc"]
            (after_kill,) = await seed_client(gen, address, [LIST])
        finally:
            node.stop()

    assert ok(after_kill) == before_kill
    roles = councils(ok(after_kill))
    assert "DEVOPS" not in roles  # a deleted council is not re-created by the start-up defaults
    assert "agent-data-9" in roles["DATA"]


LIST: Call = {"rpc": "ListCouncils", "request": {"include_agents": True}}
STATUS: Call = {"rpc": "GetStatus", "request": {"include_stats": True}}


async def every_rpc_in_the_seeds_shape(gen: Path, address: str) -> None:
    """Each of the seed's 15 RPCs, called as a seed client would, answers in the seed's shape."""
    plan = {"event_type": "PLAN_APPROVED", "case_id": "story-9", "plan_id": "plan-9",
            "metadata": {"roles": "DEV,QA", "description": "An ISO date parser with tests",
                         "approved_by": "po"}}  # fmt: skip
    calls: list[Call] = [
        {"rpc": "Deliberate", "request": {"task_id": "seed-1", "task_description": TASK,
                                          "role": "DEV", "rounds": 1, "num_agents": 3}},
        until_done("seed-1"),
        {"rpc": "StreamDeliberation", "request": {"task_id": "seed-stream", "role": "DEV",
                                                  "task_description": TASK}},
        {"rpc": "Orchestrate", "request": {
            "task_id": "seed-orch", "task_description": TASK, "role": "DEV",
            "options": {"enable_peer_review": True, "deliberation_rounds": 1,
                        "enable_architect_selection": True}}},
        {"rpc": "DeliberateForBacklogReview", "request": {
            "task_id": "ceremony-1:story-2:role-DEV", "task_description": "Review story 2"}},
        until_done("ceremony-1:story-2:role-DEV"),
        {"rpc": "ProcessPlanningEvent", "request": plan},
        {"rpc": "ProcessPlanningEvent", "request": {
            "event_type": "TRANSITION", "case_id": "story-9", "plan_id": "plan-9",
            "from_state": "DESIGN", "to_state": "BUILD"}},
        until_done("plan:plan-9:DEV"),
        until_done("plan:plan-9:QA"),
        {"rpc": "DeriveSubtasks", "request": {
            "case_id": "story-9", "plan_id": "plan-9", "roles": ["DEV", "QA"],
            "strategy": {"dependency_order": ["DEV", "QA"], "max_tasks_per_role": 2}}},
        {"rpc": "GetTaskContext", "request": {
            "task_id": "plan:plan-9:QA", "story_id": "story-9", "role": "QA", "phase": "BUILD"}},
        {**STATUS, "until": {"stats.total_deliberations": "6"}, "timeout_s": 30},
        {"rpc": "DeleteCouncil", "request": {"role": "DATA"}},
        {"rpc": "CreateCouncil", "request": {"role": "DATA", "num_agents": 2, "config": {
            "deliberation_rounds": 1, "enable_peer_review": True, "agent_type": "VLLM"}}},
        {"rpc": "RegisterAgent", "request": {"agent_id": "agent-dev-004", "role": "DEV"}},
        {"rpc": "UnregisterAgent", "request": {"agent_id": "agent-qa-003", "role": "QA"}},
        {"rpc": "CreateCouncil", "request": {"role": "QA", "num_agents": 0}},
        {"rpc": "CreateCouncil", "request": {"role": "DEV", "num_agents": 2}},
        {"rpc": "RegisterAgent", "request": {"agent_id": "agent-dev-004", "role": "DEV"}},
        LIST,
        {"rpc": "GetMetrics", "request": {"metric_type": "all"}},
    ]  # fmt: skip
    (deliberate, result, stream, orch, backlog, backlog_done, approved, transition, dev_done,
     qa_done, derived, context, status, deleted, created, registered, unregistered, bad,
     exists, twice, listing, metrics) = await seed_client(gen, address, calls)  # fmt: skip

    assert ok(deliberate)["task_id"] == "seed-1"
    r = ok(result)
    assert r["status"] == DONE and len(r["results"]) == 3 and r["winner_id"]
    assert r["winner_id"] in {x["proposal"]["author_id"] for x in r["results"]}
    assert all(x["proposal"]["author_role"] == "DEV" and x["proposal"]["content"]
               for x in r["results"])  # fmt: skip
    assert int(r["duration_ms"]) > 0

    updates = ok(stream)
    assert updates[-1]["status"] == "complete", updates
    assert updates[-1]["progress_percent"] == 100

    # Orchestrate: the architect (scripted to answer "B") chose the winner, and says why.
    o = ok(orch)
    tags = o["metadata"]["tags"]
    assert tags["selection"] == "architect", tags
    assert tags["architect_rationale"] == RATIONALE
    assert tags["architect_id"] == "agent-architect-001"
    labelled = label_candidates(
        o["execution_id"],
        [Candidate(c["proposal"]["author_id"], c["proposal"]["content"]) for c in o["candidates"]],
    )
    assert o["winner"]["proposal"]["author_id"] == labelled["B"].agent_id
    assert len(o["candidates"]) == 3 and int(o["duration_ms"]) > 0

    assert ok(backlog)["task_id"] == "ceremony-1:story-2:role-DEV"
    assert ok(backlog_done)["winner_id"].startswith("agent-dev-")

    a = ok(approved)
    assert a["processed"] is True
    assert sorted(a["derived_task_ids"]) == ["plan:plan-9:DEV", "plan:plan-9:QA"]
    assert ok(transition)["processed"] is True
    assert ok(qa_done)["winner_id"].startswith("agent-qa-") and ok(dev_done)["winner_id"]

    d = ok(derived)
    assert d["total_tasks"] == 4 and d["derivation_id"]
    by_role = {t["task_id"]: t for t in d["tasks"]}
    qa_first = by_role["sub:plan-9:QA:1"]
    assert qa_first["description"] == "Parse the ISO date string"
    assert sorted(qa_first["dependencies"]) == ["sub:plan-9:DEV:1", "sub:plan-9:DEV:2"]
    assert {t["plan_id"] for t in d["tasks"]} == {"plan-9"}

    c = ok(context)
    assert c["blocks"]["system"].startswith("Role: QA.")
    assert "story-9" in c["context_text"] and "An ISO date parser" in c["context_text"]
    assert "BUILD" in c["context_text"]  # the transition is part of the story's context
    assert c["token_count"] > 0 and len(c["version_hash"]) == 64

    s = ok(status)
    assert s["status"] == "healthy"
    stats = s["stats"]
    assert stats["total_orchestrations"] == "1"
    assert stats["role_counts"] == {"DEV": "5", "QA": "1"}
    assert stats["active_councils"] == 5 and stats["avg_deliberation_time_ms"] > 0

    assert ok(deleted)["success"] is True and ok(deleted)["agents_removed"] == 3
    made = ok(created)
    assert made["agents_created"] == 2 and len(made["agent_ids"]) == 2 and made["council_id"]
    assert ok(registered)["success"] is True and ok(registered)["council_id"]
    assert ok(unregistered)["success"] is True
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
    assert bad["error"]["details"].startswith("num_agents:")
    # Bad input is a clear error naming the field, and changes nothing (the listing below).
    assert exists["error"] == {
        "code": "FAILED_PRECONDITION",
        "details": "role: the DEV council exists already",
    }
    assert twice["error"]["code"] == "INVALID_ARGUMENT"
    assert twice["error"]["details"].startswith("agent_id:")

    roles = councils(ok(listing))
    assert roles["DEV"] == ["agent-dev-001", "agent-dev-002", "agent-dev-003", "agent-dev-004"]
    assert roles["QA"] == ["agent-qa-001", "agent-qa-002"]
    assert roles["DATA"] == sorted(made["agent_ids"])
    assert set(roles) == {"DEV", "QA", "ARCHITECT", "DEVOPS", "DATA"}

    m = ok(metrics)
    assert m["agents"]["total_agents"] == 14
    assert m["agents"]["agents_per_role"]["DEV"] == 4
    assert m["councils"]["total_councils"] == 5
    assert m["performance"]["avg_deliberation_ms"] > 0 and m["performance"]["p99_latency_ms"] > 0
