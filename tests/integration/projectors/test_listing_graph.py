"""ListDeliberations' Cypher (``application.listing``) on each graph engine: newest first, pages
that join up with none missed or repeated, filters, and the count of open deliberations."""

from __future__ import annotations

import pytest

from application.listing import DeliberationListing, ListFilter
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
