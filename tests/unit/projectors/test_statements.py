"""The graph's statements: which Cypher each event becomes, and with what parameters."""

from __future__ import annotations

from uuid import UUID

from aggregates import Deliberation
from projectors.graph.statements import Statement, proposal_id, statements_for
from tests.unit.projectors import scenarios


def _events(app_run: tuple[object, scenarios.Run]) -> list[object]:
    app, run = app_run
    return list(app.repository.event_store.get(run.deliberation_id))  # type: ignore[attr-defined]


def _completed() -> list[object]:
    app = scenarios.popo_app()
    return _events((app, scenarios.completed(app)))


def _cyphers(statements: list[Statement]) -> str:
    return "\n".join(s.cypher for s in statements)


def test_requested_with_a_plan_spawns_from_it() -> None:
    requested = _completed()[0]
    assert isinstance(requested, Deliberation.Requested)
    statements = statements_for(requested, 7)
    text = _cyphers(statements)
    assert "CREATE (d:Deliberation {id: r.id," in text
    assert "MERGE (p:Plan {id: r.plan_id})" in text and "[:SPAWNED]" in text
    first = statements[0].params
    assert first["id"] == str(requested.originator_id) and first["status"] == "PENDING"
    assert first["task_id"] == requested.task_id and first["at"].endswith("+00:00")


def test_requested_without_a_plan_makes_no_plan_node() -> None:
    app = scenarios.popo_app()
    requested = _events((app, scenarios.all_failed(app)))[0]
    assert "Plan" not in _cyphers(statements_for(requested, 1))


def test_every_event_lands_on_the_timeline_at_its_position() -> None:
    for seq, event in enumerate(_completed(), start=10):
        statements = statements_for(event, seq)
        timeline = statements[-1].params
        assert "CREATE (d)-[:HAD_EVENT]->(e:Event {id: r.event_id," in statements[-1].cypher
        assert timeline["seq"] == seq and timeline["type"] == type(event).__name__
        version = event.originator_version  # type: ignore[attr-defined]
        assert timeline["event_id"] == f"{event.originator_id}:{version}"  # type: ignore[attr-defined]


def test_proposal_ids_and_parameters() -> None:
    proposal = next(e for e in _completed() if isinstance(e, Deliberation.ProposalReceived))
    statements = statements_for(proposal, 3)
    params = next(s.params for s in statements if "CREATE (p:Proposal" in s.cypher)
    pid = proposal_id(proposal.originator_id, proposal.round, proposal.agent_id)
    assert params["proposal_id"] == pid == f"{proposal.originator_id}:0:{proposal.agent_id}"
    assert params["tokens"] == proposal.tokens and params["model"] == proposal.model


def test_late_proposals_get_their_own_node() -> None:
    late = _completed()[-1]
    assert isinstance(late, Deliberation.LateProposalReceived)
    params = next(s.params for s in statements_for(late, 1) if "late: true" in s.cypher)
    assert params["proposal_id"].endswith(f":late:{late.originator_version}")


def test_scores_are_floats_and_completion_links_the_winner() -> None:
    events = _completed()
    scored = next(e for e in events if isinstance(e, Deliberation.ProposalScored))
    (score,) = statements_for(scored, 1)[:1]
    assert isinstance(score.params["score"], float) and "max(p.round) AS top" in score.cypher
    completed = next(e for e in events if isinstance(e, Deliberation.Completed))
    text = _cyphers(statements_for(completed, 1))
    assert "CREATE (d)-[:WON_BY]->(p)" in text


def test_events_of_other_aggregates_are_not_ours() -> None:
    assert statements_for(object(), 1) == []
    assert statements_for(UUID(int=1), 1) == []


def test_scores_look_proposals_up_by_key_for_every_allowed_round() -> None:
    # A walk from the deliberation scans every proposal on LadybugDB once the graph is large;
    # the statements name each possible on-time proposal instead, so none may be missed.
    from aggregates.values import MAX_ROUNDS
    from projectors.graph.statements import candidate_ids

    events = _completed()
    scored = next(e for e in events if isinstance(e, Deliberation.ProposalScored))
    (score,) = statements_for(scored, 1)[:1]
    d_id = scored.originator_id
    expected = {proposal_id(d_id, r, scored.agent_id) for r in range(MAX_ROUNDS)}
    assert expected <= set(score.params["candidates"])
    assert score.params["candidates"] == candidate_ids(d_id, scored.agent_id)
    assert "-[:HAS_PROPOSAL]->" not in score.cypher
    completed = next(e for e in events if isinstance(e, Deliberation.Completed))
    won = next(s for s in statements_for(completed, 1) if "WON_BY" in s.cypher)
    assert won.params["candidates"] == candidate_ids(completed.originator_id, completed.winner)
