"""ListDeliberations: filtered, newest-first pages over the history graph's Deliberation nodes.

The graph is a projection, so a deliberation appears here once the graph runner has applied its
``Requested`` event (normally milliseconds) and its status is the graph's. For the authoritative
status of one deliberation use ``GetDeliberationResult``.

Paging is keyset paging on ``(created_at, id)``, both strings in every adapter (ISO-8601 UTC
times sort as text): a page token names the last row returned and a digest of the filters, so it
is stable while new deliberations arrive and refuses to continue a different query. The token is
opaque to clients (URL-safe base64 of a small JSON object); its format may change.

A search (``DeliberationListing.search``, the web console's search box) is a separate query from
the pages because it answers a different question: "where is the one I mean", not "page through
everything". It returns the newest ``SEARCH_LIMIT`` matches and says when there were more, so a
vague search is narrowed rather than paged. Matching is case-insensitive substring matching
(``toLower`` and ``CONTAINS``, which LadybugDB and Neo4j both answer the same way) over the task
text, task id and deliberation id; every word must match somewhere. It scans the Deliberation
nodes, which at 10,000 deliberations costs a few milliseconds on the embedded graph: no text
index is needed at the console's scale.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from aggregates import DeliberationStatus, InvalidDeliberationError, Role
from application.errors import ServiceUnavailableError
from application.ports import CypherRow, GraphReader
from application.rows import as_int

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
TASK_PREVIEW_CHARS = 1000  # a page of 500 stays far below the 4 MiB message limit

SEARCH_LIMIT = 50
"""A search answers at most this many matches (and says when there were more)."""
MAX_SEARCH_WORDS = 8
"""More words than this are refused: each one is a clause in the query."""

# The list's and the search's filters and columns: one text, so the two always agree.
_FILTERED = """
MATCH (d:Deliberation)
WHERE d.created_at IS NOT NULL
  AND ($status = '' OR d.status = $status)
  AND ($role = '' OR d.role = $role)
  AND ($plan_id = '' OR d.plan_id = $plan_id)
  AND ($story_id = '' OR d.story_id = $story_id)
  AND ($after = '' OR d.created_at >= $after)
  AND ($before = '' OR d.created_at < $before)
"""

_NEWEST_FIRST = """RETURN d.id AS id, d.task_id AS task_id, d.role AS role, d.status AS status,
       d.plan_id AS plan_id, d.story_id AS story_id, d.created_at AS created_at,
       d.finished_at AS finished_at, d.winner AS winner, d.num_agents AS num_agents,
       d.rounds AS rounds, d.task AS task
ORDER BY created_at DESC, id DESC
LIMIT {limit}
"""

_LIST = (
    _FILTERED
    + """  AND ($cursor_at = '' OR d.created_at < $cursor_at
       OR (d.created_at = $cursor_at AND d.id < $cursor_id))
"""
    + _NEWEST_FIRST
)

_SEARCH = _FILTERED + "  AND {words}\n" + _NEWEST_FIRST

_SEARCHED_TEXT = "toLower(coalesce(d.task, '') + ' ' + coalesce(d.task_id, '') + ' ' + d.id)"

_COUNT_OPEN = """
MATCH (d:Deliberation)
WHERE d.status = $pending OR d.status = $in_progress
RETURN count(d) AS n
"""


@dataclass(frozen=True)
class ListFilter:
    status: str = ""
    """A DeliberationStatus value (e.g. ``COMPLETED``); empty: any."""
    role: str = ""
    plan_id: str = ""
    story_id: str = ""
    created_after: datetime | None = None
    """Inclusive."""
    created_before: datetime | None = None
    """Exclusive."""

    def params(self) -> dict[str, str]:
        return {
            "status": self.status,
            "role": Role.parse(self.role).value if self.role else "",
            "plan_id": self.plan_id,
            "story_id": self.story_id,
            "after": _iso(self.created_after),
            "before": _iso(self.created_before),
        }

    def digest(self) -> str:
        raw = json.dumps(self.params(), sort_keys=True).encode()
        return hashlib.sha256(raw).hexdigest()[:12]


@dataclass(frozen=True)
class Summary:
    deliberation_id: str
    task_id: str
    role: str
    status: str
    plan_id: str
    story_id: str
    created_at: datetime | None
    finished_at: datetime | None
    winner: str
    num_agents: int
    rounds: int
    task: str


@dataclass(frozen=True)
class Page:
    items: list[Summary]
    next_token: str
    """Empty on the last page."""


@dataclass(frozen=True)
class Matches:
    """A search's answer: the newest matches, at most ``SEARCH_LIMIT`` of them."""

    items: list[Summary]
    more: bool
    """There were more matches than ``items`` holds: narrow the search."""


class DeliberationListing:
    """Lists deliberations from the history graph. Use from one asyncio loop."""

    def __init__(self, graph: GraphReader | None) -> None:
        self._graph = graph

    async def list(self, f: ListFilter, *, page_size: int = 0, page_token: str = "") -> Page:
        if self._graph is None:
            raise ServiceUnavailableError("no history graph is configured")
        if not 0 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidDeliberationError("page_size", f"{page_size} not in 0..{MAX_PAGE_SIZE}")
        size = page_size or DEFAULT_PAGE_SIZE
        params: dict[str, object] = {**f.params(), "cursor_at": "", "cursor_id": ""}
        if page_token:
            params["cursor_at"], params["cursor_id"] = _decode(page_token, f.digest())
        cypher = _LIST.format(limit=size + 1)
        rows = await self._graph.query(cypher, params, limit=size + 1)
        items = [_summary(r) for r in rows[:size]]
        token = ""
        if len(rows) > size and items:
            last = rows[size - 1]
            token = _encode(str(last["created_at"]), str(last["id"]), f.digest())
        return Page(items=items, next_token=token)

    async def search(self, f: ListFilter, text: str) -> Matches:
        """The newest deliberations under ``f`` whose task text, task id or deliberation id
        holds every word of ``text`` (case-insensitively); no words: the newest under ``f``.

        Raises:
            InvalidDeliberationError: ``text`` has more than ``MAX_SEARCH_WORDS`` words (field
                ``q``), or ``f``'s role is not a role.
            ServiceUnavailableError: no history graph is configured.
        """
        found = _words(text)
        params: dict[str, object] = dict(f.params())
        if self._graph is None:
            raise ServiceUnavailableError("no history graph is configured")
        clauses = []
        for i, w in enumerate(found):
            params[f"w{i}"] = w
            clauses.append(f"{_SEARCHED_TEXT} CONTAINS $w{i}")
        cypher = _SEARCH.format(words=" AND ".join(clauses) or "true", limit=SEARCH_LIMIT + 1)
        rows = await self._graph.query(cypher, params, limit=SEARCH_LIMIT + 1)
        items = [_summary(r) for r in rows]
        return Matches(items=items[:SEARCH_LIMIT], more=len(items) > SEARCH_LIMIT)

    async def count_open(self) -> int:
        """Deliberations requested and not yet ended (PENDING or IN_PROGRESS), in the graph.

        Counted across the whole system, not one dispatcher's share: every replica gives the
        same answer, and work that waits for a dispatcher counts too.
        """
        if self._graph is None:
            raise ServiceUnavailableError("no history graph is configured")
        params = {
            "pending": DeliberationStatus.PENDING.value,
            "in_progress": DeliberationStatus.IN_PROGRESS.value,
        }
        rows = await self._graph.query(_COUNT_OPEN, params, limit=1)
        return as_int(rows[0]["n"]) if rows else 0


def _words(text: str) -> list[str]:
    """The lower-cased words of ``text``; refuses more than ``MAX_SEARCH_WORDS``."""
    found = [w for w in text.lower().split() if w]
    if len(found) > MAX_SEARCH_WORDS:
        raise InvalidDeliberationError("q", f"at most {MAX_SEARCH_WORDS} words, got {len(found)}")
    return found


def _iso(t: datetime | None) -> str:
    return t.astimezone(UTC).isoformat() if t is not None else ""


def _encode(at: str, d_id: str, digest: str) -> str:
    raw = json.dumps({"at": at, "id": d_id, "f": digest}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str, digest: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        at, d_id, f = str(data["at"]), str(data["id"]), str(data["f"])
    except (ValueError, TypeError, KeyError):
        raise InvalidDeliberationError("page_token", "not a token this API issued") from None
    if f != digest:
        raise InvalidDeliberationError("page_token", "was issued for different filters")
    return at, d_id


def _time(v: object) -> datetime | None:
    if not v:
        return None
    try:
        return datetime.fromisoformat(str(v))
    except ValueError:
        return None


def _summary(r: CypherRow) -> Summary:
    task = str(r.get("task") or "")
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
        num_agents=as_int(r.get("num_agents") or 0),
        rounds=as_int(r.get("rounds") or 0),
        task=task[:TASK_PREVIEW_CHARS],
    )
