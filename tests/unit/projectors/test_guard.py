"""The read-only query guard: writing clauses refused, the same words in strings or comments not."""

from __future__ import annotations

import pytest

from projectors.errors import ReadOnlyQueryError
from projectors.graph.guard import require_read_only, strip_comments_and_strings


@pytest.mark.parametrize(
    "cypher",
    [
        "CREATE (:Agent {id: 'x'})",
        "MATCH (n) DETACH DELETE n",
        "match (n) set n.x = 1",
        "MATCH (n) REMOVE n.x",
        "MERGE (n:Agent {id: 'a'})",
        "DROP TABLE Agent",
        "CALL db.labels()",
        "COPY Agent FROM 'a.csv'",
        "LOAD FROM 'x.csv' RETURN *",
        "INSTALL httpfs",
        "/* comment */ CREATE (n)",
        "MATCH (n) RETURN n // fine\nCREATE (m)",
        "MATCH (n) RETURN 'a' ; ALTER TABLE Agent ADD x STRING",
    ],
)
def test_writes_are_refused(cypher: str) -> None:
    with pytest.raises(ReadOnlyQueryError):
        require_read_only(cypher)


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (d:Deliberation) RETURN d.id LIMIT 5",
        "MATCH (a:Agent) WHERE a.id = 'CREATE' RETURN a",
        'MATCH (p:Proposal) WHERE p.content CONTAINS "DELETE FROM x" RETURN p.id',
        "MATCH (n) RETURN n.offset, n.reset // CREATE in a comment",
        "MATCH (n) /* MERGE */ RETURN count(n) AS `SET`",
    ],
)
def test_reads_pass(cypher: str) -> None:
    require_read_only(cypher)


def test_stripping_handles_escapes_and_unterminated_text() -> None:
    assert "CREATE" not in strip_comments_and_strings(r"RETURN 'it\'s CREATE'")
    with pytest.raises(ReadOnlyQueryError):
        require_read_only("RETURN 'a' CREATE (n)")
    assert "DELETE" not in strip_comments_and_strings("RETURN 1 /* DELETE")
