"""Accuracy and token cost of three ways to answer, against any OpenAI-compatible endpoint.

* single    one agent, one call (agent 1's sampling);
* majority  N samples of the same prompt with the council's diverse sampling, majority vote on
            what each program *does* (self-consistency); N chosen so its tokens match the
            council's (the same token budget), at least 2;
* council   the real protocol: Fleet's DeliberationDispatcher (in memory, no NATS) with 3 agents,
            ``--rounds`` rounds, peer ratings and the static checks (``FLEET_SANDBOX=off``:
            nothing runs); the winner is the answer.
* council+exec  the same council with executed checks (the sandbox): each candidate's solution
            imported and run against the other agents' tests (cross-execution). The task's
            acceptance tests grade the answers and are shown to no method, so this council
            knows only what its agents wrote. The same calls as ``council``, so the same token
            budget; ``majority`` is matched to the council's tokens.

Problems (``problems.ALL_PROBLEMS``): eight small ones (word problems, functions), then the
selection corpus's tasks with acceptance tests (DEV and DATA: 34), 42 in all.

Every method uses Fleet's own prompts and client. Answers are checked by running the code in a
subprocess with a timeout (``problems.py``). Tokens are prompt + completion, as the server counts.

    .venv/bin/python -m bench.quality --url URL --model M [--problems N] [--start K] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent_runtime.api import (
    AgentRuntime,
    AgentTurn,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.checks.sandbox import open_sandbox
from agent_runtime.member.caller import EndpointConfig, LocalAgentRuntime
from aggregates import Deliberation
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from bench.quality.problems import ALL_PROBLEMS, Problem, correct, signature
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from dispatchers.sampling import council_sampling


class CountingRuntime(AgentRuntime):
    """Wraps a runtime and counts the tokens of every call (turns and reviews)."""

    def __init__(self, inner: LocalAgentRuntime) -> None:
        self.inner = inner
        self.tokens = 0
        self.calls = 0

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        r = await self.inner.run_turn(turn)
        self.tokens += r.prompt_tokens + r.completion_tokens
        self.calls += 1
        return r

    async def review(self, request: ReviewInput) -> ReviewResult:
        r = await self.inner.review(request)
        self.tokens += r.prompt_tokens + r.completion_tokens
        self.calls += 1
        return r

    def precheck(self, request: AssessmentInput) -> None:
        self.inner.precheck(request)

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        return await self.inner.assess(request)

    async def close(self) -> None:
        await self.inner.close()


@dataclass
class Tally:
    right: int = 0
    tokens: int = 0
    calls: int = 0
    seconds: float = 0.0


async def sample(rt: CountingRuntime, p: Problem, index: int, max_tokens: int, model: str) -> str:
    s = council_sampling("DEV", index, model)
    turn = AgentTurn(
        deliberation_id=f"q-{p.id}",
        agent_id=f"dev-agent-{index + 1}",
        role="DEV",
        round=0,
        task=p.task,
        sampling=type(s)(s.model, s.temperature, s.seed, s.persona, max_tokens),
        timeout_s=300,
    )
    try:
        return (await rt.run_turn(turn)).content
    except Exception as e:  # a failed call is a wrong answer, said so
        print(f"    [{p.id}] sample {index}: {e}", file=sys.stderr)
        return ""


async def council(
    rt: CountingRuntime, p: Problem, rounds: int, max_tokens: int, model: str, run: int
) -> str:
    app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(app)
    options = DispatcherOptions(call_timeout_s=300, model=model, max_tokens=max_tokens)
    d = Deliberation.request(
        task_id=f"quality-{p.id}-{run}",
        task=p.task,
        role="DEV",
        num_agents=3,
        rounds=rounds,
        requested_at=datetime.now(tz=UTC),
        timeout_seconds=3600,
    )
    async with DeliberationDispatcher(store, ApplicationEventFeed(app), rt, options=options):
        app.save(d)
        while not (got := await store.get(d.id)).is_terminal:  # noqa: ASYNC110 (polls the store)
            await asyncio.sleep(0.2)
    if got.winner is None:
        return ""
    return got.final_proposals()[got.winner].content


async def main_async(args: argparse.Namespace) -> None:
    problems = ALL_PROBLEMS[args.start : args.start + args.problems]
    endpoint = EndpointConfig(
        args.url, args.model, max_in_flight=4, structured_output=args.structured, sandbox="off"
    )
    inner = LocalAgentRuntime(endpoint, ("DEV",))
    executing = LocalAgentRuntime(replace(endpoint, sandbox="auto"), ("DEV",))
    box = open_sandbox("auto")
    tallies = {m: Tally() for m in ("single", "majority", "council", "council+exec")}
    verdicts: dict[str, bool] = {}
    try:
        for i, p in enumerate(problems):
            budget = 0
            for name, runtime in (("council", inner), ("council+exec", executing)):
                t0 = time.perf_counter()
                rt = CountingRuntime(runtime)
                winner = await council(rt, p, args.rounds, args.max_tokens, args.model, i)
                c = tallies[name]
                verdicts[name] = correct(p, winner)
                c.right += verdicts[name]
                c.tokens += rt.tokens
                c.calls += rt.calls
                c.seconds += time.perf_counter() - t0
                budget = budget or rt.tokens

            t0 = time.perf_counter()
            rt = CountingRuntime(inner)
            first = await sample(rt, p, 0, args.max_tokens, args.model)
            s = tallies["single"]
            s.right += correct(p, first)
            s.tokens += rt.tokens
            s.calls += rt.calls
            s.seconds += time.perf_counter() - t0
            single_tokens = max(rt.tokens, 1)

            t0 = time.perf_counter()
            n = max(2, round(budget / single_tokens))
            rt = CountingRuntime(inner)
            texts = [first] + [
                await sample(rt, p, k, args.max_tokens, args.model) for k in range(1, n)
            ]
            rt.tokens += single_tokens  # the first sample is shared with "single"
            rt.calls += 1
            sigs = [signature(p, t) for t in texts]
            votes = collections.Counter(x for x in sigs if x is not None)
            pick = texts[sigs.index(votes.most_common(1)[0][0])] if votes else texts[0]
            m = tallies["majority"]
            m.right += correct(p, pick)
            m.tokens += rt.tokens
            m.calls += rt.calls
            m.seconds += time.perf_counter() - t0
            print(
                f"  {p.id:8s} single={correct(p, first)!s:5s} majority(n={n})="
                f"{correct(p, pick)!s:5s} council={verdicts['council']!s:5s} "
                f"council+exec={verdicts['council+exec']!s:5s}",
                flush=True,
            )
    finally:
        await inner.close()
        await executing.close()
    n_p = len(problems)
    print(
        f"\nquality on {args.url} model={args.model}: {n_p} problems, max_tokens="
        f"{args.max_tokens}, council = 3 agents x {args.rounds} round(s) + peer ratings; "
        f"sandbox for council+exec: {'bwrap' if box.available else 'none: ' + box.reason}"
    )
    head = ("method", "accuracy", "tokens/problem", "calls/problem", "s/problem")
    print(f"{head[0]:12s} {head[1]:>9s} {head[2]:>15s} {head[3]:>14s} {head[4]:>10s}")
    for name, t in tallies.items():
        print(
            f"{name:12s} {t.right:>4d}/{n_p:<4d} {t.tokens / n_p:>15.0f} {t.calls / n_p:>14.1f} "
            f"{t.seconds / n_p:>10.1f}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description="single agent vs majority vote vs council")
    p.add_argument("--url", required=True, help="OpenAI-compatible base URL")
    p.add_argument("--model", required=True)
    p.add_argument("--problems", type=int, default=len(ALL_PROBLEMS))
    p.add_argument(
        "--start", type=int, default=0, help="skip this many problems (8: the corpus's first)"
    )
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument(
        "--structured",
        default="json_schema",
        choices=("json_schema", "json_object", "guided_json", "none"),
        help="how peer ratings ask for JSON (json_object for llama.cpp)",
    )
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
