"""The console's search box: deliberations whose task text, task id or deliberation id holds
the words typed, under the list's filters, newest first.

A search is a separate query from the list's keyset pages (``application.listing``) because it
answers a different question: "where is the one I mean", not "page through everything". It
returns the newest ``SEARCH_LIMIT`` matches and says when there were more, so a vague search is
narrowed rather than paged. Matching is case-insensitive substring matching (``toLower`` and
``CONTAINS``, which LadybugDB and Neo4j both answer the same way); every word must match
somewhere. It scans the Deliberation nodes, which at 10,000 deliberations costs a few
milliseconds on the embedded graph: no text index is needed at the console's scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from application.listing import ListFilter, Summary
from application.queries import DeliberationQueries

SEARCH_LIMIT = 50
MAX_WORDS = 8
"""More words than this are refused: each one is a clause in the query."""

_FIELDS = "toLower(coalesce(d.task, '') + ' ' + coalesce(d.task_id, '') + ' ' + d.id)"

_SEARCH = """
MATCH (d:Deliberation)
WHERE d.created_at IS NOT NULL
  AND ($status = '' OR d.status = $status)
  AND ($role = '' OR d.role = $role)
  AND ($plan_id = '' OR d.plan_id = $plan_id)
  AND ($story_id = '' OR d.story_id = $story_id)
  AND ($after = '' OR d.created_at >= $after)
  AND ($before = '' OR d.created_at < $before)
  AND {words}
RETURN d.id AS id, d.task_id AS task_id, d.role AS role, d.status AS status,
       d.plan_id AS plan_id, d.story_id AS story_id, d.created_at AS created_at,
       d.finished_at AS finished_at, d.winner AS winner, d.num_agents AS num_agents,
       d.rounds AS rounds, d.task AS task
ORDER BY created_at DESC, id DESC
LIMIT {limit}
"""


class SearchError(ValueError):
    """The search text cannot be run (too many words)."""


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``; refuses more than ``MAX_WORDS``."""
    found = [w for w in text.lower().split() if w]
    if len(found) > MAX_WORDS:
        raise SearchError(f"q: at most {MAX_WORDS} words, got {len(found)}")
    return found


async def search(
    queries: DeliberationQueries, f: ListFilter, text: str
) -> tuple[list[Summary], bool]:
    """The newest matches of ``text`` under ``f``, and whether there were more than shown."""
    found = words(text)
    params: dict[str, Any] = dict(f.params())
    clauses = []
    for i, w in enumerate(found):
        params[f"w{i}"] = w
        clauses.append(f"{_FIELDS} CONTAINS $w{i}")
    cypher = _SEARCH.format(words=" AND ".join(clauses) or "true", limit=SEARCH_LIMIT + 1)
    result = await queries.cypher(cypher, params, SEARCH_LIMIT + 1)
    rows = [summary(r) for r in result.rows]
    return rows[:SEARCH_LIMIT], len(rows) > SEARCH_LIMIT


def summary(r: Mapping[str, Any]) -> Summary:
    """A graph row as the list's ``Summary`` (what ``application.listing`` builds)."""
    return Summary(
        deliberation_id=str(r.get("id") or ""),
        task_id=str(r.get("task_id") or ""),
        role=str(r.get("role") or ""),
        status=str(r.get("status") or ""),
        plan_id=str(r.get("plan_id") or ""),
        story_id=str(r.get("story_id") or ""),
        created_at=_time(r.get("created_at")),
        finished_at=_time(r.get("finished_at")),
        winner=str(r.get("winner") or ""),
        num_agents=int(r.get("num_agents") or 0),
        rounds=int(r.get("rounds") or 0),
        task=str(r.get("task") or "")[:1000],
    )


def _time(v: Any) -> datetime | None:
    if not v:
        return None
    try:
        return datetime.fromisoformat(str(v))
    except ValueError:
        return None
