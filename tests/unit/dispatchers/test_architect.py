"""The architect's step of an orchestration, on the in-memory application: the architect's choice
wins over the scores and is on record with its rationale; a failed, slow or unparseable architect
falls back to the highest score with the reason recorded; a dispatcher stopped while the architect
thinks leaves the choice to the next one, recorded once.
"""

from __future__ import annotations

import asyncio

import pytest

from agent_runtime.api import AgentTurnError, ReviewInput, ReviewResult
from agent_runtime.member.architect import choice_reviews, parse_choice
from agent_runtime.member.reviews import label_candidates
from aggregates import Deliberation, DeliberationStatus, InvalidDeliberationError
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from tests.support.deliberations import requested
from tests.support.doubles import Directory
from tests.support.waiting import eventually, until_terminal
from tests.unit.dispatchers.test_protocol import GOOD, OK, ScriptedRuntime, code, fixed

pytestmark = pytest.mark.timeout(30)

PROPOSALS = {
    "dev-agent-1": fixed(code(OK, 4)),
    "dev-agent-2": fixed(code(OK, 6)),
    "dev-agent-3": fixed(code(GOOD, 9)),
}


class ArchitectRuntime(ScriptedRuntime):
    """ScriptedRuntime whose architect answers ``answer`` for each selection (parsed by the real
    parser), fails, or waits on ``hold``."""

    def __init__(self, answer: str = "", *, fail: bool = False) -> None:
        super().__init__(dict(PROPOSALS))
        self.answer = answer
        self.fail = fail
        self.hold: asyncio.Event | None = None
        self.selections: list[ReviewInput] = []

    async def review(self, request: ReviewInput) -> ReviewResult:
        if request.purpose != "select":
            return await super().review(request)
        self.selections.append(request)
        if self.hold is not None:
            await self.hold.wait()
        if self.fail:
            raise AgentTurnError("architect endpoint down")
        labelled = label_candidates(request.deliberation_id, request.candidates)
        label, note = parse_choice(self.answer, list(labelled))
        reviews = choice_reviews(request.agent_id, labelled, label, note)
        return ReviewResult(request.agent_id, reviews, "arch-model", 11, 12, 34)


def orchestration(a: FleetApplication, task_id: str, k: int = 3) -> Deliberation:
    d = requested(task_id, num_agents=3, timeout_seconds=30, requirements=["fib"])
    d.orchestrate(architect_k=k, case_id="C-1")
    a.save(d)
    return d


def label_of(d: Deliberation, agent: str) -> str:
    from agent_runtime.api import Candidate

    final = d.final_proposals()
    labelled = label_candidates(
        str(d.id), tuple(Candidate(a, final[a].content) for a in d.architect_shortlist())
    )
    return next(lb for lb, c in labelled.items() if c.agent_id == agent)


def dispatcher(a: FleetApplication, rt: ArchitectRuntime) -> DeliberationDispatcher:
    store = ApplicationDeliberationStore(a)
    return DeliberationDispatcher(
        store, ApplicationEventFeed(a), rt, options=DispatcherOptions(architect_timeout_s=0.5)
    )


async def test_the_architects_choice_wins_over_the_highest_score() -> None:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    # A first run finds the labels: the architect is told to pick dev-agent-1, the lowest score.
    probe = ArchitectRuntime('{"winner": "Z"}')
    d = orchestration(a, "arch-probe")
    async with dispatcher(a, probe):
        probed = await until_terminal(ApplicationDeliberationStore(a), d.id)
    assert probed.architect_fallback  # "Z" names nothing: the fallback, highest score
    assert probed.winner == "dev-agent-3" and "named no candidate" in probed.architect_fallback
    low = label_of(probed, "dev-agent-1")

    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    rt = ArchitectRuntime(f'Sure. {{"winner": "{low}", "rationale": "simplest to maintain"}}')
    d = orchestration(a, "arch-probe")  # the same task id: the same labels
    async with dispatcher(a, rt):
        done = await until_terminal(ApplicationDeliberationStore(a), d.id)
    assert done.status is DeliberationStatus.COMPLETED
    assert done.winner == "dev-agent-1" and done.ranking[0] == "dev-agent-1"
    assert done.architect_rationale == "simplest to maintain"
    assert done.architect_id == "architect-agent-1" and not done.architect_fallback
    kinds = [type(e).__name__ for e in a.events.get(d.id)]
    assert kinds.count("ArchitectSelected") == 1
    assert (
        kinds.index("ProposalScored") < kinds.index("ArchitectSelected") < kinds.index("Completed")
    )
    (call,) = rt.selections
    assert call.role == "ARCHITECT" and len(call.candidates) == 3


async def test_a_failed_architect_falls_back_to_the_highest_score_and_says_why() -> None:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    d = orchestration(a, "arch-fails", k=2)
    async with dispatcher(a, ArchitectRuntime(fail=True)):
        done = await until_terminal(ApplicationDeliberationStore(a), d.id)
    assert done.winner == "dev-agent-3"
    assert "architect endpoint down" in done.architect_fallback
    assert len(done.architect_candidates) == 2


async def test_a_slow_architect_falls_back_before_the_deadline() -> None:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    rt = ArchitectRuntime('{"winner": "A", "rationale": "x"}')
    rt.hold = asyncio.Event()  # never set: the architect does not answer
    d = orchestration(a, "arch-slow")
    async with dispatcher(a, rt):
        done = await until_terminal(ApplicationDeliberationStore(a), d.id)
    assert done.status is DeliberationStatus.COMPLETED
    assert "did not answer within" in done.architect_fallback


async def test_a_dispatcher_stopped_mid_selection_leaves_it_to_the_next_recorded_once() -> None:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(a)
    first = ArchitectRuntime('{"winner": "A", "rationale": "first"}')
    first.hold = asyncio.Event()
    d = orchestration(a, "arch-restart")
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), first):
        await eventually(lambda: len(first.selections) == 1, what="the architect is asked")
    # stopped while the architect thinks: scores stored, no choice, not completed
    kinds = [type(e).__name__ for e in a.events.get(d.id)]
    assert "ProposalScored" in kinds and "ArchitectSelected" not in kinds
    assert "Completed" not in kinds

    second = ArchitectRuntime('{"winner": "B", "rationale": "second"}')
    store2 = ApplicationDeliberationStore(a)
    async with DeliberationDispatcher(store2, ApplicationEventFeed(a), second):
        done = await until_terminal(store2, d.id)
    kinds = [type(e).__name__ for e in a.events.get(d.id)]
    assert kinds.count("ArchitectSelected") == 1 and kinds.count("Completed") == 1
    assert done.architect_rationale == "second" and not second.turns  # no agent asked again


def test_completing_before_the_architect_is_refused_and_a_second_choice_too() -> None:
    from aggregates import AgentAnswer, AgentId, DuplicateProposalError

    d = requested("arch-agg", num_agents=2)
    d.orchestrate(architect_k=3)
    d.start()
    for i, q in ((1, 0.2), (2, 0.9)):
        agent = AgentId(f"dev-agent-{i}")
        d.receive_proposal(agent_id=agent, round=0, answer=AgentAnswer(f"p{i}", "m", 1, 1))
        d.score(agent_id=agent, score=q, checks=[])
    with pytest.raises(InvalidDeliberationError, match="architect"):
        d.complete()
    assert d.architect_shortlist() == ["dev-agent-2", "dev-agent-1"]
    d.select_by_architect(winner="dev-agent-1", rationale="why", architect_id="architect-agent-1")
    with pytest.raises(DuplicateProposalError):
        d.fall_back_to_score(reason="late", architect_id="architect-agent-1")
    d.complete()
    assert d.winner == "dev-agent-1" and d.ranking == ["dev-agent-1", "dev-agent-2"]
    with pytest.raises(InvalidDeliberationError, match="architect_k"):
        requested("bad-k").orchestrate(architect_k=17)


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ('{"winner": "B", "rationale": "clean"}', "B"),
        ('```json\n{"choice": "candidate c", "reason": "fast"}\n```', "C"),
        ("Winner: A. It handles n=0.", "A"),
        ("I like all of them.", None),
        ('{"winner": "Q", "rationale": "?"}', None),
    ],
)
def test_the_architects_answer_is_parsed_tolerantly(answer: str, label: str | None) -> None:
    got, note = parse_choice(answer, ["A", "B", "C"])
    assert got == label
    assert note


def test_an_orchestrations_state_survives_a_snapshot() -> None:
    from aggregates import AgentAnswer, AgentId

    d = requested("arch-snap", num_agents=2)
    d.orchestrate(architect_k=2, case_id="C-9")
    d.start()
    for i in (1, 2):
        agent = AgentId(f"dev-agent-{i}")
        d.receive_proposal(agent_id=agent, round=0, answer=AgentAnswer(f"p{i}", "m", 1, 1))
        d.score(agent_id=agent, score=0.1 * i, checks=[])
    d.select_by_architect(winner="dev-agent-1", rationale="r", architect_id="architect-agent-1")
    back = Deliberation.Snapshot.take(d).mutate(None)
    assert (back.architect_k, back.case_id, back.architect_winner) == (2, "C-9", "dev-agent-1")
    assert back.architect_candidates == ("dev-agent-2", "dev-agent-1")
    back.complete()
    assert back.winner == "dev-agent-1"


async def test_the_architect_is_the_architect_councils_first_member_as_it_stands() -> None:
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    rt = ArchitectRuntime('{"winner": "A", "rationale": "lead says so"}')
    store = ApplicationDeliberationStore(a)
    d = orchestration(a, "arch-directory")
    feed = ApplicationEventFeed(a)
    async with DeliberationDispatcher(store, feed, rt, councils=Directory("lead-7", "arch-2")):
        done = await until_terminal(store, d.id)
    (call,) = rt.selections
    assert call.agent_id == "lead-7" and call.sampling.model == "arch-7b"
    assert done.architect_id == "lead-7" and done.architect_rationale == "lead says so"

    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(a)
    d = orchestration(a, "arch-no-council")
    feed = ApplicationEventFeed(a)
    async with DeliberationDispatcher(store, feed, rt, councils=Directory()):
        done = await until_terminal(store, d.id)
    assert "no ARCHITECT council" in done.architect_fallback and done.winner == "dev-agent-3"


async def test_a_role_whose_council_is_gone_when_it_starts_fails_saying_why() -> None:
    """No agents are invented: a deliberation of a role with no council (deleted after it was
    requested) ends FAILED with the reason, and no agent is asked anything."""
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    rt = ArchitectRuntime('{"winner": "A", "rationale": "-"}')
    store = ApplicationDeliberationStore(a)
    d = requested("qa-orphan", role="QA")
    a.save(d)
    async with DeliberationDispatcher(
        store, ApplicationEventFeed(a), rt, councils=Directory("lead-7")
    ):
        done = await until_terminal(store, d.id)
    assert done.status is DeliberationStatus.FAILED
    assert done.reason == "the QA role has no council: no agents to deliberate"
    assert done.agents == [] and rt.turns == [] and rt.reviews == []
