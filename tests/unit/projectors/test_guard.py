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
        "CALL db.createLabel('X')",
        "CALL apoc.create.node(['X'], {})",
        "MATCH (n) CALL { WITH n SET n.x = 1 } RETURN n",
        "MATCH (n) CALL {\n  WITH n DELETE n\n} RETURN count(*)",
        "RETURN apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
        "CALL threads=1",
        "CREATE INDEX idx FOR (n:Agent) ON (n.id)",
        "DROP INDEX idx",
        "CREATE CONSTRAINT c FOR (n:Agent) REQUIRE n.id IS UNIQUE",
        "DROP CONSTRAINT c",
        "CREATE NODE TABLE X(id STRING, PRIMARY KEY (id))",
        "ALTER TABLE Agent ADD x STRING",
        "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
        "EXPORT DATABASE '/tmp/x'",
        "ATTACH '/tmp/other' AS other",
        "USE system MATCH (n) RETURN n",
        "MATCH (n) FOREACH (x IN [1] | SET n.y = x)",
        "BEGIN TRANSACTION",
        "// a comment first\nMATCH (n) DETACH DELETE n",
        "MATCH (n) /* a */ DETACH /* b */ DELETE n",
        "MATCH (n) RETURN n; MATCH (m) RETURN m",
        "MATCH (n) ｓｅｔ n.x = 1",
        "MATCH (n) \u017fET n.x = 1",
        "MATCH (n) CRE\u200bATE (m)",
        "mErGe (n:Agent {id: 'a'})",
        "MATCH (n) RETURN 'it\\'s' + n.id\nCREATE (m)",
        "GRANT ALL ON DATABASE * TO x",
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
        "CALL db.labels()",
        "CALL show_tables() RETURN *",
        "MATCH (d:Deliberation) CALL { MATCH (p:Proposal) RETURN count(p) AS n } RETURN d.id, n",
        "MATCH (d:Deliberation) WHERE d.task CONTAINS 'DROP TABLE; CREATE' RETURN d.id;",
        "MATCH (e:Event) WHERE e.type = 'Created' RETURN e.createdAt AS settled",
    ],
)
def test_reads_pass(cypher: str) -> None:
    require_read_only(cypher)


def test_stripping_handles_escapes_and_unterminated_text() -> None:
    assert "CREATE" not in strip_comments_and_strings(r"RETURN 'it\'s CREATE'")
    with pytest.raises(ReadOnlyQueryError):
        require_read_only("RETURN 'a' CREATE (n)")
    assert "DELETE" not in strip_comments_and_strings("RETURN 1 /* DELETE")
