"""ListDeliberations' Cypher (``application.listing``) on each graph engine: newest first, pages
that join up with none missed or repeated, filters, the count of open deliberations, and the
console's search."""

from __future__ import annotations

import pytest

from aggregates import InvalidDeliberationError
from application.listing import SEARCH_LIMIT, DeliberationListing, ListFilter
from application.queries import LocalGraphReader
from projectors.graph.port import DecisionGraph
from tests.support.web import seed_listing

pytestmark = pytest.mark.timeout(60)

N = 230


async def test_pages_filters_and_open_count_on_each_engine(graph: DecisionGraph) -> None:
    seed_listing(graph, N)
    listing = DeliberationListing(LocalGraphReader(graph))
    seen: list[str] = []
    token = ""
    while True:
        page = await listing.list(ListFilter(), page_size=50, page_token=token)
        seen += [s.task_id for s in page.items]
        token = page.next_token
        if not token:
            break
    assert seen == [f"bulk-{i:05d}" for i in reversed(range(N))]  # newest first, each once

    qa_failed = await listing.list(ListFilter(status="FAILED", role="QA"), page_size=500)
    expected = [i for i in reversed(range(N)) if i % 6 == 3 and i % 4 == 1]
    assert [s.task_id for s in qa_failed.items] == [f"bulk-{i:05d}" for i in expected]
    assert all(s.status == "FAILED" and s.role == "QA" for s in qa_failed.items)
    assert qa_failed.items[0].num_agents == 3 and qa_failed.items[0].created_at is not None

    assert await listing.count_open() == sum(1 for i in range(N) if i % 6 == 5)


async def test_search_matches_every_word_under_the_filters_on_each_engine(
    graph: DecisionGraph,
) -> None:
    seed_listing(graph, N)
    listing = DeliberationListing(LocalGraphReader(graph))

    one = await listing.search(ListFilter(), "BULK-00042")  # the task id, case-insensitively
    assert [s.task_id for s in one.items] == ["bulk-00042"] and not one.more

    words = await listing.search(ListFilter(status="FAILED"), "task 1")  # every word, anywhere
    expected = [i for i in reversed(range(N)) if i % 6 == 3 and "1" in f"bulk task {i}"]
    assert [s.task_id for s in words.items] == [f"bulk-{i:05d}" for i in expected]

    vague = await listing.search(ListFilter(), "bulk")
    assert len(vague.items) == SEARCH_LIMIT and vague.more
    assert vague.items[0].task_id == f"bulk-{N - 1:05d}"  # newest first

    with pytest.raises(InvalidDeliberationError, match="q: at most 8 words, got 9"):
        await listing.search(ListFilter(), "a b c d e f g h i")
