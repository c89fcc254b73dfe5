"""Peer review: labels that ignore agent order, the schema, the tolerant parser, the score."""

from __future__ import annotations

from agent_runtime.api import AssessmentInput, Candidate, ReviewInput
from agent_runtime.checks.scoring import assess_candidates, with_peer_reviews
from agent_runtime.member.caller import structured_output_body
from agent_runtime.member.reviews import (
    label_candidates,
    normalise_rating,
    parse_reviews,
    review_messages,
    review_schema,
)
from aggregates import PeerReview
from dispatchers.councils import parse_councils

CANDS = [Candidate("dev-agent-1", "aa"), Candidate("dev-agent-2", "bb"), Candidate("x", "cc")]


def test_labels_follow_content_not_agent_order() -> None:
    a = label_candidates("d", CANDS)
    b = label_candidates("d", list(reversed(CANDS)))
    assert {k: v.content for k, v in a.items()} == {k: v.content for k, v in b.items()}
    assert list(a) == ["A", "B", "C"]


def test_a_schema_conforming_answer_is_structured() -> None:
    lab = label_candidates("d", CANDS)
    body = (
        '{"reviews": ['
        + ",".join(
            f'{{"proposal": "{k}", "score": {i + 2}, "critique": "c{k}"}}'
            for i, k in enumerate(lab)
        )
        + "]}"
    )
    got = parse_reviews(body, lab, reviewer="r")
    assert [g.source for g in got] == ["structured"] * 3
    assert [g.score for g in got] == [normalise_rating(2), normalise_rating(3), normalise_rating(4)]
    assert got[0].target == lab["A"].agent_id and got[0].text == "cA"


def test_other_shapes_are_parsed_and_junk_falls_back() -> None:
    lab = label_candidates("d", CANDS[:2])
    assert [
        g.source for g in parse_reviews('```json\n{"A": 9, "B": "4/10"}\n```', lab, reviewer="r")
    ] == [
        "parsed",
        "parsed",
    ]
    lines = parse_reviews("Proposal A: 8/10 solid\nB - 3 wrong base case", lab, reviewer="r")
    assert [round(g.score or 0, 3) for g in lines] == [0.778, 0.222] and lines[
        1
    ].text == "wrong base case"
    cut = parse_reviews(
        '{"reviews":[{"proposal":"B","score":10,"critique":"aaaa', lab, reviewer="r"
    )
    assert [(g.source, g.score) for g in cut] == [("fallback", None), ("parsed", 1.0)]
    junk = parse_reviews("```python\ndef f(): pass\n```", lab, reviewer="r")
    assert all(g.score is None and g.source == "fallback" for g in junk)
    assert normalise_rating(11) is None and normalise_rating(True) is None
    assert normalise_rating(0) == 0.0 and normalise_rating("10") == 1.0


def test_structured_output_request_shapes() -> None:
    schema = review_schema(["A", "B"])
    assert structured_output_body("json_schema", schema)["response_format"]["type"] == "json_schema"
    assert structured_output_body("json_object", schema)["response_format"]["schema"] == schema
    assert structured_output_body("guided_json", schema) == {"guided_json": schema}
    assert structured_output_body("none", schema) == {}
    req = ReviewInput("d", "r", "DEV", 0, "rate", "fib", candidates=tuple(CANDS[:2]))
    text = review_messages(req, label_candidates("d", CANDS[:2]))[0].content
    assert "Proposal A" in text and "dev-agent" not in text  # reviewers never see agent ids


def test_peer_ratings_rank_but_checks_gate() -> None:
    good = "```python\ndef f(x):\n    return x\n```"
    broken = "```python\ndef f(x)\n    return x\n```"
    praise = (PeerReview("r", "b", 1.0),)
    faint = (PeerReview("r", "g", 0.2),)
    [g, b] = assess_candidates(
        AssessmentInput(
            "d",
            "DEV",
            "t",
            "",
            (),
            (Candidate("g", good, faint), Candidate("b", broken, praise)),
            peer_review=True,
        )
    )
    assert g.score > b.score
    [n] = assess_candidates(
        AssessmentInput(
            "d",
            "DEV",
            "t",
            "",
            (),
            (Candidate("n", good, (PeerReview("r", "n", None, source="fallback"),)),),
            True,
        )
    )
    peer = next(c for c in n.checks if c.check_type == "peer_review")
    assert peer.score == 0.5 and peer.details["fallbacks"] == "1" and not peer.passed


def test_councils_configure_sampling_per_agent() -> None:
    c = parse_councils({"dev": {"agents": [{"model": "qwen", "temperature": 0.1, "seed": 5}, {}]}})
    s0 = c.sampling("DEV", 0, "default", 99)
    s1 = c.sampling("DEV", 1, "default", 99)
    s2 = c.sampling("DEV", 2, "default", 99)
    assert (s0.model, s0.temperature, s0.seed, s0.max_tokens) == ("qwen", 0.1, 5, 99)
    assert s1.model == "default" and s1.seed != s0.seed
    assert (s2.model, s2.seed) == ("qwen", 5)  # entries repeat
    assert c.sampling("QA", 0, "m", 10).model == "m"


def test_ratings_folded_into_early_checks_score_as_checking_with_them() -> None:
    """The dispatcher checks the text while the peers rate it and folds the ratings in after:
    the score must be the one checking everything at once gives, for every kind of answer."""
    good = "Validate.\n```python\ndef f(x):\n    return x\n```"
    broken = "```python\ndef f(x)\n    return x\n```"
    prose = "I would validate the input first."
    ratings = [(), (PeerReview("r", "a", 0.7),), (PeerReview("r", "a", None, source="fallback"),)]
    for role in ("DEV", "QA"):
        for content in (good, broken, prose, ""):
            for reviews in ratings:
                rated = Candidate("a", content, reviews)
                [early] = assess_candidates(
                    AssessmentInput("d", role, "t", "", ("validate",), (Candidate("a", content),))
                )
                [whole] = assess_candidates(
                    AssessmentInput("d", role, "t", "", ("validate",), (rated,), peer_review=True)
                )
                assert with_peer_reviews(early, rated, role) == whole
                assert with_peer_reviews(whole, rated, role) == whole  # folding twice: no change
