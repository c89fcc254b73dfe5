"""RayAgentRuntime on real Ray actors against the load generator (and once, the real model)."""

from __future__ import annotations

import asyncio

import pytest

from agent_runtime.api import (
    AgentTurn,
    AgentTurnError,
    AssessmentInput,
    Candidate,
    PeerProposal,
    ReviewInput,
    ReviewResult,
    Sampling,
)
from agent_runtime.checks.static_checks import extract_code_blocks
from agent_runtime.member.openai_client import RetryPolicy
from agent_runtime.ray_backend.runtime import RayAgentRuntime
from fleet.embedded.llm import LlamaServer
from fleet_testing.loadgen import LoadGenServer
from tests.support.processes import gone
from tests.support.waiting import eventually

pytestmark = pytest.mark.usefixtures("ray_session")

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)


def turn(
    delib: str,
    agent: str,
    *,
    role: str = "DEV",
    round_no: int = 0,
    timeout_s: float = 20.0,
    peers: tuple[PeerProposal, ...] = (),
) -> AgentTurn:
    return AgentTurn(
        deliberation_id=delib,
        agent_id=agent,
        role=role,
        round=round_no,
        task="Write a function that doubles a number.",
        requirements=("validate input",),
        peers=peers,
        sampling=Sampling(temperature=0.7, seed=7, max_tokens=64),
        timeout_s=timeout_s,
    )


async def test_three_concurrent_turns_and_warm_pool(loadgen: LoadGenServer) -> None:
    runtime = await RayAgentRuntime.start(
        loadgen.url, "loadgen", ["DEV", "QA"], 3, retry=FAST_RETRY
    )
    try:
        before = {s.actor_id for s in await runtime.stats()}
        assert len(before) == 6
        for delib in ("d-1", "d-2"):
            results = await asyncio.gather(
                *(runtime.run_turn(turn(delib, f"agent-dev-{i}")) for i in range(3))
            )
            assert [r.agent_id for r in results] == [f"agent-dev-{i}" for i in range(3)]
            assert all("```python" in r.content for r in results)
            assert all(r.completion_tokens > 0 and r.prompt_tokens > 0 for r in results)
        after = await runtime.stats()
        assert {s.actor_id for s in after} == before, "no actor may be created per deliberation"
        dev = [s for s in after if s.role == "DEV"]
        assert sorted(s.turns_served for s in dev) == [2, 2, 2]
        assert loadgen.counters.answered == 6
    finally:
        await runtime.close()


async def test_round_one_sends_peers(loadgen: LoadGenServer) -> None:
    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        peers = (PeerProposal("agent-dev-2", "PEER-TEXT-XYZ"),)
        result = await runtime.run_turn(turn("d-3", "agent-dev-1", round_no=1, peers=peers))
        assert result.round == 1
        sent = loadgen.requests[-1]
        user, prefill = sent["messages"]
        assert "PEER-TEXT-XYZ" in user["content"]
        assert prefill == {"role": "assistant", "content": "```python\n"}
        assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
        assert sent["user"] == "agent-dev-1" and sent["seed"] == 7 and sent["max_tokens"] == 64
    finally:
        await runtime.close()


async def test_failures_become_agent_turn_errors(loadgen: LoadGenServer) -> None:
    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 2, retry=FAST_RETRY)
    try:
        with pytest.raises(AgentTurnError, match=r"HTTP 500") as failed:
            await runtime.run_turn(turn("d-4", "dev-loadgen:fail-1"))
        assert loadgen.url in str(failed.value)
        with pytest.raises(AgentTurnError, match=r"timed out"):
            await runtime.run_turn(turn("d-4", "dev-loadgen:hang-2", timeout_s=1.0))
        with pytest.raises(AgentTurnError, match=r"no council for role"):
            await runtime.run_turn(turn("d-4", "agent-qa-1", role="QA"))
        # A failure does not poison the actor: the next turn on it is answered.
        ok = await runtime.run_turn(turn("d-4", "agent-dev-1"))
        assert ok.content
    finally:
        await runtime.close()


async def test_assess_runs_the_checks(loadgen: LoadGenServer) -> None:
    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 2, retry=FAST_RETRY)
    try:
        good = "Validate input.\n```python\ndef double(x: int) -> int:\n    return 2 * x\n```"
        broken = "```python\ndef double(x):\n    return 2 *\n```"
        request = AssessmentInput(
            "d-5",
            "DEV",
            "double a number",
            "",
            ("validate input",),
            (Candidate("agent-dev-1", broken), Candidate("agent-dev-2", good)),
        )
        scores = await runtime.assess(request)
        assert [a.agent_id for a in scores] == ["agent-dev-1", "agent-dev-2"]
        assert scores[1].score > scores[0].score
        assert {c.check_type for c in scores[1].checks} == {
            "policy",
            "dryrun",
            "lint",
            "cross_exec",
        }
        # The dry run ran (on an actor, in its sandbox), it did not just compile.
        [dry] = [c for c in scores[1].checks if c.check_type == "dryrun"]
        assert dry.details["mode"] == "sandbox" and dry.message == "solution imports and runs"
        # And the actors say so when asked where their checks run (GetNodeStatus shows it).
        states = await runtime.sandboxes()
        assert len(states) == 2
        assert {(b.mode, b.available, b.reason) for b in states} == {("auto", True, "")}
    finally:
        await runtime.close()


async def test_checks_started_early_run_on_an_actor_and_score_the_same(
    loadgen: LoadGenServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``precheck`` (the dispatcher's hint while the peers rate) checks the text on an actor;
    ``assess`` then gives exactly what checking here gives, with the ratings folded in. Text
    that changed since is checked again on an actor; an early check whose actor died is checked
    here, where nothing the model wrote runs: its executed checks say "not run"."""
    import ray

    from agent_runtime.checks.sandbox import open_sandbox
    from agent_runtime.checks.scoring import assess_candidates
    from agent_runtime.ray_backend import runtime as ray_runtime
    from aggregates import PeerReview

    box = open_sandbox("bwrap")  # what the actor runs the candidates in

    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        good = "Validate input.\n```python\ndef double(x: int) -> int:\n    return 2 * x\n```"
        broken = "```python\ndef double(x):\n    return 2 *\n```"
        rated = (
            Candidate("agent-dev-1", broken, (PeerReview("agent-dev-2", "agent-dev-1", 0.9),)),
            Candidate("agent-dev-2", good, (PeerReview("agent-dev-1", "agent-dev-2", 0.4),)),
        )
        request = AssessmentInput("d-9", "DEV", "double", "", ("validate input",), rated, True)
        expected = assess_candidates(request, box)  # everything checked at once, with a sandbox

        before = runtime.ray_calls
        runtime.precheck(request)
        await asyncio.sleep(0.5)  # the peers would be rating now
        assert runtime.ray_calls - before == 1  # one Ray call for the deliberation's checks

        def not_here(_: AssessmentInput) -> None:
            raise AssertionError("checked on the caller's loop although checked early")

        with monkeypatch.context() as m:
            m.setattr(ray_runtime, "assess_candidates", not_here)
            assert await runtime.assess(request) == expected

        # The text changed after the early check (a revision the copy did not see): checked
        # again, on the actor (never here: DEV code runs only in an actor's sandbox).
        runtime.precheck(request)
        changed = (rated[0], Candidate("agent-dev-2", good + "\n", rated[1].peer_reviews))
        again = AssessmentInput("d-9", "DEV", "double", "", ("validate input",), changed, True)
        with monkeypatch.context() as m:
            m.setattr(ray_runtime, "assess_candidates", not_here)
            assert await runtime.assess(again) == assess_candidates(again, box)

        # The actor dies under the early check: nothing is lost, the checks run here, without
        # running the code, and say so.
        [actor] = await runtime.stats()
        ray.kill(runtime.actor_for("DEV", "agent-dev-1"), no_restart=True)
        await eventually(lambda: gone(actor.pid), what=f"actor process {actor.pid} still alive")
        runtime.precheck(request)
        here = await runtime.assess(request)
        assert [a.agent_id for a in here] == [a.agent_id for a in expected]
        for a in here:
            [dry] = [c for c in a.checks if c.check_type == "dryrun"]
            assert dry.details["mode"] == "compile"
            assert dry.details["executed"].startswith("not run: the agent runtime's actor")
        assert here[1].score > here[0].score  # the broken code still loses
    finally:
        await runtime.close()


@pytest.mark.llm
@pytest.mark.timeout(300)
async def test_real_gemma_answers_through_ray(llm_server: LlamaServer) -> None:
    runtime = await RayAgentRuntime.start(llm_server.url, llm_server.model_alias, ["DEV"], 1)
    try:
        t = AgentTurn(
            deliberation_id="d-llm",
            agent_id="agent-dev-0",
            role="DEV",
            round=0,
            task="Write a Python function that reverses a string.",
            sampling=Sampling(temperature=0.7, seed=1, max_tokens=96),
            timeout_s=180.0,
        )
        result = await runtime.run_turn(t)
        assert result.model == llm_server.model_alias
        assert result.completion_tokens > 0
        # A base model: through Gemma's chat template it echoed the prompt back. Through the
        # fleet-base format it continues the prefilled code block, which comes back closed.
        assert "senior Python developer" not in result.content
        [block] = extract_code_blocks(result.content)
        assert block.language == "python" and "def " in block.code
        print(f"gemma: {result.latency_ms} ms, {result.completion_tokens} tokens\n{result.content}")
    finally:
        await runtime.close()


def _collector(_actor: object) -> tuple[tuple[int, int, int], int]:
    import gc

    return gc.get_threshold(), gc.get_freeze_count()


async def test_an_actor_collects_as_a_long_running_process(loadgen: LoadGenServer) -> None:
    """An actor's process is long-running: its collector runs as ``fleet up``'s does (what
    start-up allocated frozen, young passes rarer), not at Python's defaults."""
    from lifecycle.collector import GC_THRESHOLDS

    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        actor = runtime.actor_for("DEV", "agent-dev-0")
        thresholds, frozen = await actor.__ray_call__.remote(_collector)
        assert tuple(thresholds) == GC_THRESHOLDS
        assert frozen > 10_000  # Ray, aiohttp and the member: not an empty freeze
    finally:
        await runtime.close()


async def test_a_killed_actor_is_restarted_and_serves_again(loadgen: LoadGenServer) -> None:
    import ray

    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        first = await runtime.run_turn(turn("d-6", "agent-dev-0"))
        [before] = await runtime.stats()
        ray.kill(runtime.actor_for("DEV", "agent-dev-0"), no_restart=False)  # as a crash would
        # The kill is a request to Ray's control plane: a call sent at once can still reach the
        # old process. Wait until that process is gone, as it would be after a crash.
        await eventually(lambda: gone(before.pid), what=f"actor process {before.pid} still alive")
        # A fresh worker process starts first: seconds on a busy 2-core machine, past the 20 s a
        # turn gets by default when other work shares the cores.
        again = await runtime.run_turn(turn("d-6", "agent-dev-0", timeout_s=90.0))
        [after] = await runtime.stats()
        assert again.content == first.content  # same request, same canned answer
        assert after.actor_id == before.actor_id and after.pid != before.pid
    finally:
        await runtime.close()


async def test_calls_that_start_together_share_one_ray_call(loadgen: LoadGenServer) -> None:
    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        before = runtime.ray_calls
        results = await asyncio.gather(
            *(runtime.run_turn(turn("d-7", f"agent-dev-{i}")) for i in range(3))
        )
        assert [r.agent_id for r in results] == [f"agent-dev-{i}" for i in range(3)]
        assert len({r.content for r in results}) == 3  # each its own answer, not a copy
        assert runtime.ray_calls - before == 1
        lone = await runtime.run_turn(turn("d-8", "agent-dev-0"))  # alone: a plain call
        assert lone.agent_id == "agent-dev-0"
        assert runtime.ray_calls - before == 2
    finally:
        await runtime.close()


async def test_a_slow_call_does_not_hold_back_the_others_of_its_batch(
    loadgen: LoadGenServer,
) -> None:
    runtime = await RayAgentRuntime.start(loadgen.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
    try:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        done_at: dict[str, float] = {}

        async def timed(t: AgentTurn) -> object:
            try:
                return await runtime.run_turn(t)
            except AgentTurnError as e:
                return e
            finally:
                done_at[t.agent_id] = loop.time() - t0

        before = runtime.ray_calls
        fast_a, fast_b, slow = await asyncio.gather(
            timed(turn("d-9", "agent-dev-0")),
            timed(turn("d-9", "agent-dev-1")),
            timed(turn("d-9", "dev-loadgen:hang-2", timeout_s=3.0)),
        )
        assert not isinstance(fast_a, Exception) and not isinstance(fast_b, Exception)
        assert isinstance(slow, AgentTurnError) and "d-9:0:dev-loadgen:hang-2" in str(slow)
        # The answers came back while their sibling still hung, not when it gave up.
        assert done_at["agent-dev-0"] < 2.0 and done_at["agent-dev-1"] < 2.0
        assert done_at["dev-loadgen:hang-2"] >= 3.0
        assert runtime.ray_calls - before == 2  # the batch, then one collect for the slow one
    finally:
        await runtime.close()


async def test_the_final_ratings_start_on_the_actor_before_the_dispatcher_asks() -> None:
    """One deliberation through the dispatcher on one actor per role: the actor starts the
    three ratings as soon as the three answers are in, the dispatcher's requests (a Ray round
    trip later) join those calls, and the endpoint sees six calls, not nine."""
    import time

    from aggregates import DeliberationStatus
    from application.app import FleetApplication
    from application.feed import ApplicationEventFeed
    from application.stores import ApplicationDeliberationStore
    from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
    from tests.support.waiting import until_terminal
    from tests.unit.dispatchers.test_protocol import request

    class Stamped(list[dict[str, object]]):
        """The endpoint's requests, each stamped when it arrived."""

        def __init__(self) -> None:
            super().__init__()
            self.at: list[float] = []

        def append(self, body: dict[str, object]) -> None:
            self.at.append(time.monotonic())
            super().append(body)

    async with LoadGenServer("instant", delay_s=0.3) as lg:
        lg.requests = Stamped()
        runtime = await RayAgentRuntime.start(lg.url, "loadgen", ["DEV"], 1, retry=FAST_RETRY)
        asked: list[float] = []
        real_review = runtime.review

        async def review(asking: ReviewInput) -> ReviewResult:
            asked.append(time.monotonic())
            return await real_review(asking)

        runtime.review = review  # type: ignore[method-assign,assignment]
        app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        store = ApplicationDeliberationStore(app)
        try:
            options = DispatcherOptions(call_timeout_s=20, model="loadgen")
            async with DeliberationDispatcher(
                store, ApplicationEventFeed(app), runtime, options=options
            ):
                done = await until_terminal(store, request(app, "early-ratings").id)
            assert done.status is DeliberationStatus.COMPLETED
            assert done.rated() == {"dev-agent-1", "dev-agent-2", "dev-agent-3"}
            assert lg.counters.answered == 6
            assert len(asked) == 3
            ratings_at = lg.requests.at[3:]
            assert len(ratings_at) == 3 and max(ratings_at) < min(asked)
            [stats] = await runtime.stats()
            assert stats.early_ratings_joined == 3
        finally:
            await runtime.close()
