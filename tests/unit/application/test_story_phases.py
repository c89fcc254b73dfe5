"""Story transitions: the planning body read strictly where it matters and tolerantly elsewhere;
each transition recorded once on the Story aggregate."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from aggregates.errors import InvalidDeliberationError
from aggregates.story import Phase, Story, story_id_of
from application.story_phases import BadStoryTransition, parse_story_transition


def _body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def test_a_transition_is_read_with_any_case_and_unknown_fields() -> None:
    t = parse_story_transition(
        _body(story_id=" s-1 ", from_phase="design", to_phase="BUILD", timestamp=1_700_000_000,
              ceremony="x")
    )  # fmt: skip
    assert (t.story_id, t.from_phase, t.to_phase) == ("s-1", Phase.DESIGN, Phase.BUILD)
    assert t.at == datetime.fromtimestamp(1_700_000_000, tz=UTC)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"not json", "not JSON"),
        (b"[1]", "not an object"),
        (_body(from_phase="DESIGN", to_phase="BUILD"), "story_id"),
        (_body(story_id="s", to_phase="BUILD"), "from_phase"),
        (_body(story_id="s", from_phase="DESIGN", to_phase="SHIP"), "to_phase"),
        (_body(story_id="s", from_phase="TEST", to_phase="test"), "to_phase"),
    ],
)
def test_a_bad_body_names_what_is_wrong(body: bytes, field: str) -> None:
    with pytest.raises(BadStoryTransition, match=field):
        parse_story_transition(body)


def test_each_transition_is_recorded_once_and_the_phase_follows() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    story = Story.register("s-9")
    assert story.id == story_id_of("s-9")
    assert story.change_phase(Phase.DESIGN, Phase.BUILD, at)
    assert not story.change_phase(Phase.DESIGN, Phase.BUILD, at)  # a redelivery
    assert story.change_phase(Phase.BUILD, Phase.TEST, at)
    assert story.phase is Phase.TEST
    changed = [e for e in story.collect_events() if isinstance(e, Story.PhaseChanged)]
    assert [(e.story_id, e.from_phase, e.to_phase) for e in changed] == [
        ("s-9", "DESIGN", "BUILD"),
        ("s-9", "BUILD", "TEST"),
    ]


def test_an_empty_story_id_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidDeliberationError, match="story_id"):
        Story.register("  ")
