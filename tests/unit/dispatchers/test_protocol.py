"""The deliberation protocol on the in-memory application: critiques, revisions, peer ratings,
scoring from checks and ratings, order independence, cancellation and resumption.

The fake runtime answers per agent as scripted and rates like a judge that reads a quality mark
in each proposal (``Q=<n>``); scoring is the real one (``agent_runtime.checks.scoring``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent_runtime.api import (
    AgentTurn,
    ReviewInput,
    ReviewResult,
    final_rating,
)
from aggregates import AgentAnswer, AgentId, Deliberation, DeliberationStatus, PeerReview
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from tests.support.deliberations import requested
from tests.support.doubles import ScriptedRuntime
from tests.support.waiting import eventually, until_terminal


def code(body: str, quality: int) -> str:
    return f"Q={quality}\n```python\n{body}\n```"


GOOD = (
    "def fib(n: int) -> int:\n    a, b = 0, 1\n"
    "    for _ in range(n):\n        a, b = b, a + b\n    return a"
)
OK = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)"
BROKEN = "def fib(n)\n    return n"


def fixed(text: str) -> Callable[[AgentTurn], str]:
    return lambda turn: text


def setup(
    rt: ScriptedRuntime,
) -> tuple[FleetApplication, ApplicationDeliberationStore, DeliberationDispatcher]:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(a)
    return a, store, DeliberationDispatcher(store, ApplicationEventFeed(a), rt)


def request(a: FleetApplication, task_id: str, *, rounds: int = 1, agents: int = 3) -> Deliberation:
    d = requested(
        task_id, num_agents=agents, rounds=rounds, timeout_seconds=30, requirements=["fib"]
    )
    a.save(d)
    return d


async def test_the_better_proposal_of_the_last_agent_wins() -> None:
    rt = ScriptedRuntime(
        {
            "dev-agent-1": fixed(code(OK, 4)),
            "dev-agent-2": fixed(code(OK, 5)),
            "dev-agent-3": fixed(code(GOOD, 9)),
        }
    )
    a, store, dispatcher = setup(rt)
    async with dispatcher:
        done = await until_terminal(store, request(a, "last-wins").id)
    assert done.status is DeliberationStatus.COMPLETED
    assert done.ranking[0] == "dev-agent-3" and done.winner == "dev-agent-3"
    # every agent rated its two peers; nobody rated itself
    assert done.rated() == {"dev-agent-1", "dev-agent-2", "dev-agent-3"}
    assert all(rv.reviewer != rv.target for rs in done.ratings.values() for rv in rs)
    checks = {c.check_type: c for c in done.final_proposals()[AgentId("dev-agent-3")].checks}
    assert set(checks) == {"policy", "dryrun", "lint", "cross_exec", "peer_review"}
    assert checks["peer_review"].score == round(8 / 9, 4)


async def test_code_that_does_not_compile_loses_even_when_peers_praise_it() -> None:
    rt = ScriptedRuntime(
        {
            "dev-agent-1": fixed(code(BROKEN, 10)),
            "dev-agent-2": fixed(code(OK, 3)),
            "dev-agent-3": fixed(code(OK, 3)),
        }
    )
    a, store, dispatcher = setup(rt)
    async with dispatcher:
        done = await until_terminal(store, request(a, "broken").id)
    assert done.ranking[-1] == "dev-agent-1"
    broken = {c.check_type: c for c in done.final_proposals()[AgentId("dev-agent-1")].checks}
    assert not broken["dryrun"].passed and broken["peer_review"].score == 1.0


async def test_ranking_does_not_depend_on_agent_order() -> None:
    texts = [code(OK, 3), code(GOOD, 8), code(OK, 6)]
    rankings = []
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        rt = ScriptedRuntime({f"dev-agent-{i + 1}": fixed(texts[j]) for i, j in enumerate(order)})
        a, store, dispatcher = setup(rt)
        async with dispatcher:
            done = await until_terminal(store, request(a, "same-task").id)
        by_content = [done.final_proposals()[x].content for x in done.ranking]
        rankings.append(by_content)
    assert rankings[0] == rankings[1] == rankings[2]
    assert rankings[0][0] == texts[1]


async def test_later_rounds_critique_then_revise_and_revisions_are_scored() -> None:
    def improving(turn: AgentTurn) -> str:
        if turn.round == 0:
            return code(OK, 4)
        assert turn.peers and turn.own_previous and turn.critiques  # saw peers and critiques
        return code(GOOD, 8)

    rt = ScriptedRuntime(
        {
            "dev-agent-1": improving,
            "dev-agent-2": fixed(code(OK, 5)),
            "dev-agent-3": fixed(code(OK, 5)),
        }
    )
    a, store, dispatcher = setup(rt)
    async with dispatcher:
        d = request(a, "two-rounds", rounds=2)
        done = await until_terminal(store, d.id)
    events = list(a.events.get(d.id))
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("CritiqueReceived") == 3
    assert kinds.count("ProposalRevised") == 3
    assert kinds.count("PeerRatingsReceived") == 3
    assert kinds.index("CritiqueReceived") < kinds.index("ProposalRevised")
    assert done.final_proposals()[AgentId("dev-agent-1")].round == 1
    assert done.winner == "dev-agent-1"
    assert [r.purpose for r in rt.reviews].count("critique") == 3
    # The final (revised) texts were handed over for checking right behind the three ratings
    # (the same loop turn: on Ray they share the actor's batch, ratings first).
    assert rt.prechecks == [(3, {a: p.content for a, p in done.final_proposals().items()})]


async def test_an_unusable_or_failed_rating_is_recorded_and_neutral() -> None:
    rt = ScriptedRuntime(
        {
            "dev-agent-1": fixed(f"```python\n{OK}\n```"),  # no Q mark: the judge cannot rate it
            "dev-agent-2": fixed(code(OK, 5)),
        },
        rate_fails={"dev-agent-2"},
    )
    a, store, dispatcher = setup(rt)
    async with dispatcher:
        done = await until_terminal(store, request(a, "neutral", agents=2).id)
    assert done.status is DeliberationStatus.COMPLETED
    assert done.review_errors == {("dev-agent-2", -1): "judge offline"}
    peer = {c.check_type: c for c in done.final_proposals()[AgentId("dev-agent-1")].checks}[
        "peer_review"
    ]
    assert peer.score == 0.5 and "neutral" in peer.details


async def test_a_cancel_on_the_feed_stops_in_flight_work_promptly() -> None:
    rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(OK, 5)) for i in (1, 2, 3)})
    rt.gate = asyncio.Event()  # round-1 turns hang until released
    a, store, dispatcher = setup(rt)
    async with dispatcher:
        d = request(a, "cancel-me", rounds=2)
        await eventually(lambda: any(t.round == 1 for t in rt.turns), what="no round-1 turn")
        assert dispatcher.active == 1
        await store.update(d.id, lambda d: d.cancel("user"))
        await eventually(lambda: dispatcher.active == 0, what="the driver still runs")
        assert dispatcher.active == 0 and dispatcher.cancelled_drivers == 1
    done = await store.get(d.id)
    assert done.status is DeliberationStatus.CANCELLED


async def test_a_restart_during_a_later_round_runs_only_what_is_missing() -> None:
    rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(OK, 3 + i)) for i in (1, 2, 3)})
    rt.gate = asyncio.Event()
    a, store, dispatcher = setup(rt)
    d = request(a, "resume", rounds=2)
    async with dispatcher:  # round 0 and the critiques run; the revisions hang
        await eventually(lambda: sum(t.round == 1 for t in rt.turns) == 3, what="revisions")
    before = await store.get(d.id)
    assert before.critiqued(1) == {"dev-agent-1", "dev-agent-2", "dev-agent-3"}
    rt2 = ScriptedRuntime(rt.proposals)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt2):
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.COMPLETED
    assert sorted((t.agent_id, t.round) for t in rt2.turns) == [
        ("dev-agent-1", 1), ("dev-agent-2", 1), ("dev-agent-3", 1),
    ]  # fmt: skip
    assert [r.purpose for r in rt2.reviews] == ["rate"] * 3  # no critique asked twice


class SlowAnswersStore(ApplicationDeliberationStore):
    """The real store, except that a proposal's write waits at a gate (a slow event store)."""

    def __init__(self, app: FleetApplication) -> None:
        super().__init__(app)
        self.gate = asyncio.Event()
        self.held = 0

    async def update(self, deliberation_id: Any, change: Any) -> Any:
        if "receive_proposal" in getattr(getattr(change, "__code__", None), "co_names", ()):
            self.held += 1
            await self.gate.wait()
        return await super().update(deliberation_id, change)


async def test_ratings_go_out_while_the_answers_are_written_and_land_after_them() -> None:
    rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(GOOD, 5 + i)) for i in (1, 2, 3)})
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = SlowAnswersStore(a)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        d = request(a, "overlap")
        # the peers are asked to rate while no proposal is stored yet
        # (the answers' writes reach the store on their own tasks: wait for both, gate closed)
        await eventually(
            lambda: len(rt.reviews) == 3 and store.held == 3,
            what="three rating requests while three answer writes wait at the gate",
        )
        assert len(rt.reviews) == 3
        stored = await store.get(d.id)
        assert stored.proposals == {} and stored.rated() == set()  # nothing recorded yet
        # Each reviewer saw its peers' answers, taken from the driver's copy.
        assert all(len(r.candidates) == 2 for r in rt.reviews)
        store.gate.set()
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.COMPLETED
    assert done.winner == "dev-agent-3"
    types = [type(e).__name__ for e in await store.history(d.id)]
    last_proposal = max(i for i, t in enumerate(types) if t == "ProposalReceived")
    first_rating = types.index("PeerRatingsReceived")
    assert last_proposal < first_rating  # the stream holds the protocol's order


class SlowRater(ScriptedRuntime):
    """Rates after a delay per rater, so that one rating comes back last."""

    def __init__(self, delays: dict[str, float], **kw: Any) -> None:
        super().__init__({f"dev-agent-{i}": fixed(code(GOOD, 5 + i)) for i in (1, 2, 3)}, **kw)
        self.delays = delays

    async def review(self, request: ReviewInput) -> ReviewResult:
        await asyncio.sleep(self.delays.get(request.agent_id, 0.0))
        return await super().review(request)


class WritesSeen(ApplicationDeliberationStore):
    """The real store, noting what each write carried (by the commands' names)."""

    def __init__(self, app: FleetApplication) -> None:
        super().__init__(app)
        self.writes: list[list[str]] = []
        self.before_in_order: Callable[[Any], Any] | None = None

    async def update(self, deliberation_id: Any, change: Any) -> Any:
        self.writes.append([_command(change)])
        return await super().update(deliberation_id, change)

    async def update_in_order(self, deliberation_id: Any, changes: Any) -> Any:
        self.writes.append([_command(c) for c in changes])
        if self.before_in_order is not None:
            hook, self.before_in_order = self.before_in_order, None
            await hook(deliberation_id)
        return await super().update_in_order(deliberation_id, changes)


def _command(change: Any) -> str:
    names = getattr(getattr(change, "__code__", None), "co_names", ())
    known = ("receive_ratings", "score", "complete", "receive_proposal", "start")
    return next((n for n in known if n in names), "other")


async def test_the_last_rating_the_scores_and_the_decision_are_one_write() -> None:
    rt = SlowRater({"dev-agent-1": 0.0, "dev-agent-2": 0.05, "dev-agent-3": 0.2})
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = WritesSeen(a)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "one-write").id)
    assert done.status is DeliberationStatus.COMPLETED and done.winner == "dev-agent-3"
    # The first two ratings were stored as they came; the last one travelled with the scores
    # and the decision: one write after the last answer, not a write and then another.
    ratings_alone = [w for w in store.writes if w == ["receive_ratings"]]
    assert len(ratings_alone) == 2
    assert store.writes[-1] == ["receive_ratings", "score", "score", "score", "complete"]
    types = [type(e).__name__ for e in await store.history(done.id)]
    assert types.count("PeerRatingsReceived") == 3
    assert max(i for i, t in enumerate(types) if t == "PeerRatingsReceived") < types.index(
        "ProposalScored"
    )
    # Scored from all three ratings: 3's proposal (Q=8) was rated by both peers.
    checks = {c.check_type: c for c in done.final_proposals()[AgentId("dev-agent-3")].checks}
    assert checks["peer_review"].details["ratings"] == "2"


async def test_scores_come_from_the_stored_ratings_when_the_copy_missed_a_write() -> None:
    """Another process records dev-agent-3's rating first (with other marks): the rating the
    driver brought is refused, its scores no longer match what is stored, and the scores are
    computed again from the stored ratings."""
    rt = SlowRater({"dev-agent-1": 0.0, "dev-agent-2": 0.05, "dev-agent-3": 0.2})
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = WritesSeen(a)

    async def other_process_rates(d_id: Any) -> None:
        def rate(d: Deliberation) -> None:
            reviews = [
                PeerReview("dev-agent-3", t, 0.0, "poor", "structured")
                for t in ("dev-agent-1", "dev-agent-2")
            ]
            d.receive_ratings(agent_id=AgentId("dev-agent-3"), reviews=reviews)

        await ApplicationDeliberationStore.update(store, d_id, rate)

    store.before_in_order = other_process_rates
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt):
        done = await until_terminal(store, request(a, "stale-copy").id)
    assert done.status is DeliberationStatus.COMPLETED
    types = [type(e).__name__ for e in await store.history(done.id)]
    assert types.count("PeerRatingsReceived") == 3  # the refused one was not stored
    assert types.count("ProposalScored") == 3
    by_3 = {rv.target: rv.score for rv in done.ratings[AgentId("dev-agent-3")]}
    assert by_3 == {"dev-agent-1": 0.0, "dev-agent-2": 0.0}
    # dev-agent-1's score folds in the stored 0.0 from dev-agent-3, not the copy's rating.
    checks = {c.check_type: c for c in done.final_proposals()[AgentId("dev-agent-1")].checks}
    assert "dev-agent-3=0.00" in checks["peer_review"].details["by"]


async def test_the_last_rounds_turns_promise_exactly_the_ratings_that_are_asked_for() -> None:
    """``rate_after`` lets a runtime start the final ratings early; ``final_rating`` of the
    promised turns must then be, field for field, what the dispatcher asks (one round, and the
    last of two rounds), and nothing is promised where no rating follows."""
    for rounds in (1, 2):
        rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(OK, 3 + i)) for i in (1, 2, 3)})
        a, store, dispatcher = setup(rt)
        async with dispatcher:
            await until_terminal(store, request(a, f"promise-{rounds}", rounds=rounds).id)
        last = [t for t in rt.turns if t.round == rounds - 1]
        assert all(t.rate_after == ("dev-agent-1", "dev-agent-2", "dev-agent-3") for t in last)
        assert all(t.rate_after == () for t in rt.turns if t.round < rounds - 1)
        answers = {t.agent_id: rt.proposals[t.agent_id](t) for t in last}
        predicted = sorted((final_rating(t, answers) for t in last), key=lambda r: r.agent_id)
        asked = sorted((r for r in rt.reviews if r.purpose == "rate"), key=lambda r: r.agent_id)
        assert predicted == asked


async def test_no_rating_is_promised_without_peer_review_or_after_a_partial_round() -> None:
    rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(OK, 4)) for i in (1, 2, 3)})
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(a)
    options = DispatcherOptions(peer_review=False)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt, options=options):
        await until_terminal(store, request(a, "no-review").id)
    assert rt.turns and all(t.rate_after == () for t in rt.turns)
    # A restarted dispatcher that asks only the agents still owing an answer promises nothing:
    # the final proposals would include one it does not ask for.
    rt = ScriptedRuntime({f"dev-agent-{i}": fixed(code(OK, 4)) for i in (1, 2, 3)})
    a, store, dispatcher = setup(rt)
    d = request(a, "resumed")
    await store.update(d.id, lambda d: d.start())
    first = AgentAnswer(content=code(OK, 4), model="m", tokens=1, latency_ms=1)
    await store.update(
        d.id, lambda d: d.receive_proposal(agent_id=AgentId("dev-agent-1"), round=0, answer=first)
    )
    async with dispatcher:
        await until_terminal(store, d.id)
    assert [t.agent_id for t in rt.turns] == ["dev-agent-2", "dev-agent-3"]
    assert all(t.rate_after == () for t in rt.turns)
