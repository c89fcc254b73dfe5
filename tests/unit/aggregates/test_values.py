"""The values' dict forms are what events store: spelled out for speed, they must still carry
every field, so a field added to a value and not to its ``as_dict`` is caught here."""

from __future__ import annotations

import dataclasses

from aggregates import Deliberation
from aggregates.values import AgentAnswer, CheckOutcome, PeerReview
from tests.unit.aggregates.test_deliberation import A1, requested


def test_check_outcome_as_dict_is_every_field_and_a_copy_of_its_details() -> None:
    c = CheckOutcome("dryrun", True, 0.75, "3 of 4 passed", {"executed": "yes", "tests": "4"})
    d = c.as_dict()
    assert d == dataclasses.asdict(c)
    d["details"]["tests"] = "changed"
    assert c.details["tests"] == "4"  # the stored form never aliases the value's dict
    assert CheckOutcome.from_dict(c.as_dict()) == c


def test_peer_review_as_dict_is_every_field() -> None:
    r = PeerReview("agent-dev-0", "agent-dev-1", None, "no usable rating", "fallback")
    assert r.as_dict() == dataclasses.asdict(r)
    assert PeerReview.from_dict(r.as_dict()) == r


def test_a_proposal_event_records_every_field_of_the_answer() -> None:
    answer = AgentAnswer(
        content="```python\ndef f():\n    return 1\n```",
        model="m",
        tokens=12,
        latency_ms=30,
        prompt_tokens=40,
        temperature=0.7,
        seed=3,
        persona="terse",
        thinking_retried=True,
        prompt=(("system", "be brief"), ("user", "write f")),
        attempts=2,
    )
    d = requested(num_agents=1)
    d.start([A1])
    d.receive_proposal(agent_id=A1, round=0, answer=answer)
    [event] = [e for e in d.collect_events() if isinstance(e, Deliberation.ProposalReceived)]
    for f in dataclasses.fields(AgentAnswer):
        want = getattr(answer, f.name)
        if f.name == "prompt":
            want = [{"role": r, "content": c} for r, c in answer.prompt]
        assert getattr(event, f.name) == want, f.name
