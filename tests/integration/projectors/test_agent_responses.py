"""Backlog-review and task-extraction results on the seed's ``agent.response.*`` subjects, read
by a plain nats-py subscriber (nothing of Fleet's): each agent's result once, with the planning
task id and the seed's fields, in ``AGENT_RESPONSES`` (made with the seed's settings), across a
restart and a rebuild.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
from nats.js.api import StorageType

from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation
from application.app import FleetApplication
from eventstore._loop_thread import LoopThread
from fleet.embedded.nats import NatsServer
from projectors.outbox import AppHistory, OutboxProjection
from projectors.outbox.agent_responses import (
    AGENT_RESPONSE_SUBJECTS,
    BACKLOG_REVIEW_ROLE,
    agent_responses,
    handles_agent_response,
)
from projectors.outbox.jetstream import (
    AGENT_RESPONSES_MAX_AGE_S,
    AGENT_RESPONSES_STREAM,
    AGENT_RESPONSES_SUBJECTS,
    JetStreamOutboxStream,
    OutboxUnavailableError,
)
from projectors.outbox.verify import verify_outbox
from projectors.runner import ProjectorRunner
from tests.support.deliberations import requested
from tests.support.schema_consumer import check, validators

REVIEW = "ceremony-c1:story-s1:role-ARCHITECT"
EXTRACTION = "ceremony-c1:story-s1:task-extraction"


def _runner(app: FleetApplication, url: str, bridge: LoopThread) -> ProjectorRunner:
    stream = JetStreamOutboxStream.open(
        url,
        bridge,
        source="FLEET_EVENTS",
        stream=AGENT_RESPONSES_STREAM,
        subjects=AGENT_RESPONSES_SUBJECTS,
        probe=BACKLOG_REVIEW_ROLE,
        max_age_s=AGENT_RESPONSES_MAX_AGE_S,
        scope="agent-responses",
    )
    projection = OutboxProjection(
        stream,
        AppHistory(app),
        name="agent-responses",
        derive=agent_responses,
        handles=handles_agent_response,
    )
    return ProjectorRunner(app, projection, owner="node", retry_on=(OutboxUnavailableError,))


def _log(tag: str) -> list[Deliberation]:
    """A backlog review (two answers, one agent failed), a task extraction (one answer, tasks
    as JSON), and a plain deliberation (its agents' results are nobody's business there)."""
    review = requested(
        REVIEW.replace("c1", f"c1{tag}"),
        role="ARCHITECT",
        metadata={"story_id": "s1", "ceremony_id": f"c1{tag}", "source": "backlog-review"},
        story_id="s1",
    )
    review.start()
    a, b, c = review.agents
    for k, agent in enumerate((a, c)):
        answer = AgentAnswer(content=f"review by {agent}", model="m", tokens=5 + k, latency_ms=7)
        review.receive_proposal(agent_id=AgentId(agent), round=0, answer=answer)
    review.fail_agent(agent_id=AgentId(b), round=0, error="HTTP 503 from the model")
    for agent, score in ((a, 0.4), (c, 0.7)):
        review.score(
            agent_id=AgentId(agent),
            score=score,
            checks=[CheckOutcome(check_type="lint", passed=True, score=1.0)],
        )
    review.complete()
    extraction = requested(EXTRACTION.replace("c1", f"c1{tag}"), role="ARCHITECT", num_agents=1)
    extraction.start()
    tasks = json.dumps({"tasks": [{"title": "Add the login form", "estimated_hours": 3}]})
    answer = AgentAnswer(content=f"```json\n{tasks}\n```", model="m", tokens=9, latency_ms=11)
    extraction.receive_proposal(agent_id=extraction.agents[0], round=0, answer=answer)
    lint = CheckOutcome(check_type="lint", passed=True, score=1.0)
    extraction.score(agent_id=extraction.agents[0], score=1.0, checks=[lint])
    extraction.complete()
    plain = requested(f"plain-{tag}")
    plain.start()
    plain.cancel("not needed")
    return [review, extraction, plain]


async def _read(url: str, *, at_least: int, timeout: float = 20.0) -> list[tuple[str, Any]]:
    """Every message on ``agent.response.>`` from the start: a consumer elsewhere's code."""
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().pull_subscribe("agent.response.>", durable=None)
        out: list[tuple[str, Any]] = []
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            try:
                msgs = await sub.fetch(batch=64, timeout=0.5)
            except TimeoutError:
                if len(out) >= at_least:
                    break
                continue
            for m in msgs:
                await m.ack()
                out.append((m.subject, json.loads(m.data)))
        return out
    finally:
        await nc.close()


async def test_backlog_review_results_reach_a_plain_subscriber_once_each(
    app: FleetApplication, private_nats_server: NatsServer, bridge: LoopThread
) -> None:
    url = private_nats_server.url
    log = _log("a")
    review = log[0]
    app.save(*log)
    head = app.recorder.max_notification_id() or 0
    runner = _runner(app, url, bridge)
    runner.start()
    await asyncio.to_thread(runner.wait, head, 20)
    got = await _read(url, at_least=4)
    assert [s for s, _ in got] == [
        BACKLOG_REVIEW_ROLE,
        "agent.response.failed",
        BACKLOG_REVIEW_ROLE,
        "agent.response.completed.task-extraction",
    ]
    known = validators()
    for subject, body in got:
        check(subject, body, known)
    a, b, c = review.agents
    first, failed, third, extracted = (body for _, body in got)
    # The seed's fields, at the top level (its flat readers) and in the envelope's payload.
    for body in (first, first["payload"]):
        assert body["task_id"] == "ceremony-c1a:story-s1:role-ARCHITECT"
        assert (body["agent_id"], body["role"], body["num_agents"]) == (a, "ARCHITECT", 3)
        assert body["status"] == "completed"
        assert body["proposal"]["content"] == f"review by {a}"
        assert body["proposal"]["author_id"] == a
        assert body["constraints"]["metadata"]["ceremony_id"] == "c1a"
        assert body["constraints"]["metadata"]["task_type"] == "BACKLOG_REVIEW_ROLE"
    assert first["score"] == 0.4 and third["agent_id"] == c
    assert (failed["agent_id"], failed["status"]) == (b, "failed")
    assert failed["error"] == "HTTP 503 from the model" and failed["num_agents"] == 3
    assert extracted["tasks"] == [{"title": "Add the login form", "estimated_hours": 3}]
    assert (extracted["story_id"], extracted["ceremony_id"]) == ("s1", "c1a")
    keys = [body["idempotency_key"] for _, body in got]
    assert len(set(keys)) == 4

    # The stream was made with the seed's settings.
    nc = await nats.connect(url)
    info = await nc.jetstream().stream_info(AGENT_RESPONSES_STREAM)
    await nc.close()
    assert info.config.subjects == ["agent.response.>"]
    assert info.config.storage == StorageType.FILE
    assert info.config.max_age == AGENT_RESPONSES_MAX_AGE_S

    # A restart and a rebuild publish nothing again; new results follow.
    runner.close()
    runner = _runner(app, url, bridge)
    runner.start()
    await asyncio.to_thread(runner.wait, head, 20)
    runner.close()
    runner.projection.reset()
    runner = runner.fresh()
    runner.start()
    app.save(*_log("b"))
    head = app.recorder.max_notification_id() or 0
    await asyncio.to_thread(runner.wait, head, 20)
    runner.close()
    got = await _read(url, at_least=8)
    assert len(got) == 8
    assert len({body["idempotency_key"] for _, body in got}) == 8
    assert {s for s, _ in got} == set(AGENT_RESPONSE_SUBJECTS)
    outbox = runner.projection
    assert isinstance(outbox, OutboxProjection)
    assert await asyncio.to_thread(verify_outbox, app, outbox) == []
