"""The web console in a real browser (Debian's headless Chromium, driven by Playwright) against a
real node: nats-server, the LadybugDB graph, the dispatcher and agents calling the load generator.

What a user would notice: the list grows when a deliberation lands; a deliberation's page shows
what GetDeliberationResult returns; the slider shows what ``fleet replay --to-version`` folds;
submit and cancel work from the page; model output that holds HTML stays text; without the token
nothing is served. The figures of docs/web-console.md are measured here (printed with ``-s``);
``FLEET_WEB_SCREENSHOTS=docs/images`` also saves the screenshots the README shows.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from application.councils import CouncilAgentView, CouncilChange, CouncilView
from application.listing import DeliberationListing
from application.queries import DeliberationQueries, LocalGraphReader
from application.replay import replay
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.grpc._services import ApiServices
from fleet.web import WebConsole
from fleet_testing.loadgen import LoadGenServer
from projectors.graph.ladybug import LadybugGraph
from tests.e2e._node import loadgen_node_settings
from tests.support.waiting import eventually
from tests.support.web import MARKDOWN_XSS, XSS, rich_deliberation, seed_listing

playwright_api = pytest.importorskip("playwright.async_api")
CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium package"),
]
SHOTS = os.environ.get("FLEET_WEB_SCREENSHOTS", "")
TOP: Any = {"x": 0, "y": 0, "width": 1280, "height": 560}
"""What a screenshot keeps: the top of the page (the README's images stay small)."""


@dataclass
class Console:
    node: FleetNode
    client: FleetClient
    url: str
    browser: Any
    nats_url: str
    llm: LoadGenServer

    async def page(self, route: str = "#/", url: str | None = None) -> Any:
        page = await self.browser.new_page(viewport={"width": 1280, "height": 860})
        page.on("dialog", lambda d: pytest.fail(f"a dialog opened: {d.message}"))
        await page.goto((url or self.url) + route)
        return page


@pytest_asyncio.fixture(scope="module")
async def console(
    tmp_path_factory: pytest.TempPathFactory, nats_url: str
) -> AsyncIterator[Console]:
    from playwright.async_api import async_playwright

    async with LoadGenServer("instant", delay_s=0.15) as llm:
        settings = loadgen_node_settings(
            tmp_path_factory.mktemp("web"), nats_url, llm.url, web_port=0
        )
        async with (
            FleetNode(settings) as node,
            FleetClient(node.endpoints.grpc) as client,
            async_playwright() as pw,
        ):
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                yield Console(node, client, node.endpoints.web, browser, nats_url, llm)
            finally:
                await browser.close()


class _Councils:
    """The councils read model as the council store will serve it (one QA council)."""

    async def list_councils(self) -> list[CouncilView]:
        agent = CouncilAgentView("qa-agent-1", "QA", model="qwen3")
        return [CouncilView("council-qa", "QA", agents=[agent], version=4)]

    async def council(self, role: str) -> CouncilView | None:
        return (await self.list_councils())[0] if role == "QA" else None

    async def history(self, role: str) -> list[CouncilChange]:
        return [CouncilChange(1, "Created", "2026-11-25T00:00:00+00:00")]


async def _finished(client: FleetClient, task_id: str) -> Any:
    async def done() -> Any:
        r = await client.result(task_id)
        return r if r.status >= 3 or r.winner_id else None  # COMPLETED or a terminal state

    return await eventually(done, timeout=30, what=f"{task_id} never finished")


async def test_pages_carry_a_strict_content_security_policy(console: Console) -> None:
    async with aiohttp.ClientSession() as http, http.get(console.url) as r:
        assert r.status == 200
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        bad = {"status": "NOPE", "role": "WIZARD", "after": "yesterday", "page_size": "9999",
               "q": "%20".join("abcdefghi")}  # fmt: skip
        for field, value in bad.items():
            query = f"{field}={value}"
            async with http.get(f"{console.url}api/deliberations?{query}") as r:
                assert r.status == 400 and (await r.json())["error"].startswith(field), query
        async with http.get(f"{console.url}api/deliberations/never-asked") as r:
            assert r.status == 404


async def test_the_list_grows_live_when_a_deliberation_lands(console: Console) -> None:
    page = await console.page()
    await page.wait_for_selector("#deliberations")
    await page.wait_for_selector("#live.on")  # the stream is subscribed: what lands now is shown
    await console.client.deliberate("write fib", task_id="web-live-1", num_agents=3)
    row = page.locator('tr[data-task="web-live-1"]')
    await row.wait_for(timeout=5000)
    await row.locator(".status.COMPLETED").wait_for(timeout=30000)  # and its status follows
    await page.locator("#counts .chip", has_text="COMPLETED").wait_for()  # counts follow too


async def test_the_page_shows_what_get_deliberation_result_returns(console: Console) -> None:
    await console.client.deliberate("write fib", task_id="web-result-1", num_agents=3)
    result = await _finished(console.client, "web-result-1")
    page = await console.page("#/d/web-result-1?view=text")
    await page.wait_for_selector("#proposals .proposal")
    assert await page.locator("#proposals .proposal").count() == len(result.results)
    for r in result.results:
        card = page.locator(f'.proposal[data-agent="{r.proposal.author_id}"]')
        assert await card.locator(".score").inner_text() == f"score {r.score:.3f}"
        assert await card.locator(".rank").inner_text() == f"rank {r.rank}"
        assert await card.locator("pre.content").inner_text() == r.proposal.content
        suite = r.checks
        shown = {await c.get_attribute("data-check") for c in await card.locator(".check").all()}
        slots = {"policy", "lint", "dryrun"} & {f.name for f, _ in suite.ListFields()}
        assert {c.check_type for c in suite.additional_checks} | slots <= shown | {"dryrun"}
        for c in suite.additional_checks:
            assert c.message in await card.locator(f'[data-check="{c.check_type}"]').inner_text()
    assert await page.locator("#winner").inner_text() == result.winner_id
    assert await page.locator("#critique-graph .node").count() == 3
    assert await page.locator("#timeline rect").count() >= 3


async def test_the_slider_shows_what_fleet_replay_folds(console: Console) -> None:
    d = rich_deliberation("web-replay-1", agents=3, rounds=2)
    await console.node.store.create(d)  # type: ignore[union-attr]
    page = await console.page("#/d/web-replay-1")
    await page.wait_for_selector("#revisions")  # revisions show as diffs
    assert "+# round 1: n < 0 raises" in await page.locator("#revisions").inner_text()
    for n in (3, 6, 14):
        await page.eval_on_selector(
            "#version", "(s, n) => { s.value = n; s.dispatchEvent(new Event('change')); }", n
        )
        await page.locator("#version-label", has_text=f"version {n} of").wait_for()
        folded = await asyncio.to_thread(
            replay, console.nats_url, console.node.settings.stream, "web-replay-1", n
        )
        f = folded.deliberation
        assert await page.locator("#status").inner_text() == f.status.value
        assert await page.locator("#winner").inner_text() == (f.winner or "-")
        cards = await page.locator("#proposals .proposal").count()
        assert cards == len(f.final_proposals())
        assert await page.locator("#events-body tr").count() == len(folded.entries)


async def test_model_output_with_html_renders_as_text(console: Console) -> None:
    await console.node.store.create(rich_deliberation("web-xss-1", content=XSS))  # type: ignore[union-attr]
    page = await console.page("#/d/web-xss-1?view=text")
    await page.wait_for_selector("#proposals .proposal")
    card = page.locator('.proposal[data-agent="dev-agent-1"] pre.content')
    assert await card.inner_text() == XSS.rstrip("\n") or XSS in await card.inner_text() + "\n"
    assert await page.locator("#proposals img, #proposals script, #proposals a").count() == 0
    assert await page.evaluate("window.__xss") is None
    assert "<b>bold?</b>" in await page.locator("dd pre.plain").first.inner_text()


async def test_submit_and_cancel_from_the_page(console: Console) -> None:
    page = await console.page("#/submit")
    await page.fill("textarea[name=task]", "write a sorting function")
    await page.fill("input[name=task_id]", "web-submit-1")
    await page.fill("input[name=rounds]", "3")
    tests = "from solution import sort\n\ndef test_sorts():\n    assert sort([2, 1]) == [1, 2]\n"
    await page.fill("textarea[name=acceptance_tests]", tests)
    await page.click("#submit button[type=submit]")
    await page.wait_for_url("**#/d/web-submit-1")
    await page.click("#cancel")
    await page.locator("#status .CANCELLED").wait_for(timeout=5000)
    assert (await console.client.result("web-submit-1")).status == 6  # CANCELLED
    # A bad field comes back named, on the page.
    page = await console.page("#/submit")
    await page.fill("textarea[name=task]", "x")
    await page.fill("input[name=role]", "WIZARD")
    await page.click("#submit button[type=submit]")
    assert "role" in await page.locator("#submit-result.error").inner_text()


async def test_without_the_token_nothing_is_served_and_writes_stay_same_site(
    console: Console,
) -> None:
    web = console.node.servers["web"]
    assert isinstance(web, WebConsole)
    guarded = WebConsole(web.services, token="s3cret")
    url = await guarded.start("127.0.0.1", 0)
    try:
        body = {"task": "write fib", "task_id": "web-token-1", "role": "DEV"}
        auth = {"Authorization": "Bearer s3cret"}
        async with aiohttp.ClientSession() as http:
            for method, path in (("GET", "api/deliberations"), ("POST", "api/deliberations")):
                async with http.request(method, url + path, json=body) as r:
                    assert r.status == 401, (method, path)
            evil = {**auth, "Origin": "https://evil.example"}
            async with http.post(url + "api/deliberations", json=body, headers=evil) as r:
                assert r.status == 403
            text = {**auth, "Content-Type": "text/plain"}
            async with http.post(url + "api/deliberations", data="{}", headers=text) as r:
                assert r.status == 415
            async with http.post(url + "api/deliberations", json=body, headers=auth) as r:
                assert r.status == 200, await r.text()
        page = await console.page(url=url)
        await page.fill("input[name=token]", "s3cret")
        await page.click("button[type=submit]")
        await page.locator('tr[data-task="web-token-1"]').wait_for(timeout=10000)
    finally:
        await guarded.close()


async def _paint_ms(page: Any) -> float:
    entries = await page.evaluate(
        "performance.getEntriesByType('paint').map(e => [e.name, e.startTime])"
    )
    return float(dict(entries)["first-contentful-paint"])


async def test_figures(console: Console, tmp_path: Path) -> None:
    """10,000 deliberations open in < 1 s, 16 agents × 3 rounds in < 500 ms (first contentful
    paint), and a live page has each event within 250 ms of its commit (p99)."""
    graph = LadybugGraph(tmp_path / "graph")
    seed_listing(graph, 10_000)
    reader = LocalGraphReader(graph)
    store = console.node.store
    assert store is not None
    big = WebConsole(
        ApiServices(
            store, DeliberationQueries(store, None, reader), 60, listing=DeliberationListing(reader)
        )
    )
    big_url = await big.start("127.0.0.1", 0)
    try:
        page = await console.page(url=big_url)
        await page.locator("#rows tr").nth(49).wait_for()
        fcp, listed = await _paint_ms(page), await page.evaluate("window.fleetMarks.listRendered")
        counts = await page.locator("#counts").inner_text()
        print(f"\nlist of 10,000: first contentful paint {fcp:.0f} ms, rows shown {listed:.0f} ms")
        assert fcp < 1000 and listed < 3000, (fcp, listed)
        assert "10000" not in counts and "1667" in counts  # counts over all 10,000, by status
        if SHOTS:
            await page.screenshot(path=f"{SHOTS}/web-list.png", clip=TOP)
    finally:
        await big.close()
        graph.close()

    await store.create(rich_deliberation("web-16x3", agents=16, rounds=3))
    page = await console.page("#/d/web-16x3")
    await page.locator("#proposals .proposal").nth(15).wait_for()
    fcp, shown = await _paint_ms(page), await page.evaluate("window.fleetMarks.detailRendered")
    t0 = time.perf_counter()
    await console.client.result("web-16x3")
    await console.client.history("web-16x3")
    cli_ms = (time.perf_counter() - t0) * 1000
    print(
        f"16 agents x 3 rounds: first contentful paint {fcp:.0f} ms, page drawn {shown:.0f} ms; "
        f"the CLI's reads (GetDeliberationResult + GetDeliberationHistory) {cli_ms:.0f} ms"
    )
    assert fcp < 500, fcp
    if SHOTS:
        await page.screenshot(path=f"{SHOTS}/web-deliberation.png", clip=TOP)
        await page.locator("#critique-graph").screenshot(path=f"{SHOTS}/web-critique-graph.png")

    # A figure on two cores that the whole test run shares: measured again, once, on a new
    # deliberation when the first is over (a load spike elsewhere); a slow page fails both.
    p99, lags = await _live_lag(console, "web-lag-1")
    if p99 >= 250:
        p99, lags = await _live_lag(console, "web-lag-2")
    assert p99 < 250, lags


async def _live_lag(console: Console, task_id: str) -> tuple[float, list[int]]:
    """The p99 of how long after each event's time a live page had it, over one deliberation of
    6 agents x 3 rounds; and the lags, in ms."""
    # The agents' first calls wait until the page's stream is open, so that the deliberation's
    # events come live however long the page takes to load (on a slow machine it can finish
    # before the stream opens, and every event would then come with the stream's stored part).
    console.llm.mode = "hang"
    try:
        await console.client.deliberate("write fib", task_id=task_id, num_agents=6, rounds=3)
        page = await console.page(f"#/d/{task_id}")
        await page.wait_for_function("() => window.fleetMarks.liveSince > 0", timeout=30000)
    finally:
        console.llm.mode = "instant"
        console.llm.release_held()
    await page.locator("#status .COMPLETED").wait_for(timeout=30000)
    lags: list[int] = await page.evaluate("window.fleetMarks.lags || []")
    assert len(lags) >= 10, lags  # the events recorded while the page was open
    p99 = statistics.quantiles(lags, n=100, method="inclusive")[98] if len(lags) > 1 else lags[0]
    print(f"live ({task_id}): {len(lags)} events, median {statistics.median(lags):.0f} ms, "
          f"p99 {p99:.0f} ms, max {max(lags)} ms from the event's time to the page")  # fmt: skip
    return float(p99), lags


async def test_plans_councils_projections_events_and_cypher_pages(console: Console) -> None:
    page = await console.page("#/plans")
    await page.fill("input[name=plan_id]", "plan-web-1")
    await page.fill("input[name=story_id]", "story-web-1")
    await page.fill("input[name=roles]", "DEV")
    await page.click("form.box button[type=submit]")
    approved = await page.locator("#approve-result", has_text="approved").inner_text()
    task_id = approved.split(": ", 1)[1]

    async def plan_shown() -> str:
        p = await console.page("#/plans/plan-web-1")
        try:
            await p.locator("h2").first.wait_for()  # drawn
            text: str = await p.locator("main").inner_text()
            return text if task_id in text else ""
        finally:
            await p.close()

    shown: str = await eventually(plan_shown, timeout=15, what=f"{task_id} listed under its plan")
    assert "story-web-1" in shown
    page = await console.page("#/plans/plan-web-1")
    await page.locator("#plans").wait_for()
    assert "story-web-1" in await page.locator("#plans").inner_text()
    if SHOTS:
        await page.screenshot(path=f"{SHOTS}/web-plans.png", clip=TOP)

    page = await console.page("#/councils")
    # the node's own councils: the seed's five, created as events on first start
    dev = page.locator("main .card", has_text="DEV council")
    seeded = await dev.inner_text()
    assert "agent-dev-001" in seeded and "agent-dev-003" in seeded
    # its history, from the council's events: created, then its three agents registered
    await dev.locator("details.council-history summary").click()
    history = dev.locator(".history-body table")
    await history.wait_for()
    text = await history.inner_text()
    assert "Created" in text and text.count("AgentRegistered") == 3 and "agent-dev-002" in text
    web = console.node.servers["web"]
    assert isinstance(web, WebConsole)
    with_councils = WebConsole(web.services, councils=_Councils())
    url = await with_councils.start("127.0.0.1", 0)
    try:
        page = await console.page("#/councils", url=url)
        text = await page.locator("main .card", has_text="QA council").inner_text()
        assert "qa-agent-1" in text and "qwen3" in text and "v4" in text
    finally:
        await with_councils.close()

    page = await console.page("#/projections")
    await page.locator("#projections tbody tr").first.wait_for()
    # The sandbox as the node's agents found it at start (GetNodeStatus), in words.
    box = console.node.sandbox
    assert box is not None
    shown = await page.locator("#sandbox").inner_text()
    assert f"FLEET_SANDBOX={box.mode}" in shown and ("behind walls" in shown) == box.available
    if box.available:
        assert f"{box.slots} runs at once per process for {box.cpus}" in shown, shown
    await page.click("text=Verify")
    await page.locator("#verify-result", has_text="compared").wait_for(timeout=30000)

    page = await console.page("#/events")
    await page.wait_for_selector("#tail", state="attached")
    await page.wait_for_function("document.getElementById('live').classList.contains('on')")
    await console.client.deliberate("write fib", task_id="web-tail-1", num_agents=3)
    await page.locator('#tail a[href="#/d/web-tail-1"]').first.wait_for(timeout=10000)

    page = await console.page("#/query")
    await page.click("form.box button[type=submit]")
    await page.locator("#result-table tbody tr").first.wait_for(timeout=10000)
    assert await page.locator("#result-graph .edge").count() >= 1
    await page.fill("#cypher", "CREATE (x:Agent {id: 'no'})")
    await page.click("form.box button[type=submit]")
    assert "cypher" in await page.locator("#query-result .error").inner_text()
    if SHOTS:
        await page.fill("#cypher", "MATCH (d:Deliberation)-[w:WON_BY]->(a) RETURN d.task_id, a.id")
        await page.click("form.box button[type=submit]")
        await page.locator("#result-graph").wait_for()
        await page.screenshot(path=f"{SHOTS}/web-cypher.png", clip=TOP)


async def test_a_web_only_node_serves_the_console_against_the_stores(
    console: Console, tmp_path: Path
) -> None:
    """``fleet up --components web``: no API, no projector; the graph is read through the node
    that runs the projectors, deliberations from the event store."""
    from dataclasses import replace

    s = replace(
        console.node.settings,
        data_dir=tmp_path,
        components=frozenset({"web"}),
        grpc_port=0,
        web_port=0,
    )
    await console.client.deliberate("write fib", task_id="web-only-1", num_agents=3)
    await _finished(console.client, "web-only-1")
    async with FleetNode(s) as web_node:
        assert web_node.endpoints.grpc == "" and web_node.endpoints.web
        page = await console.page(url=web_node.endpoints.web)
        await page.locator('tr[data-task="web-only-1"]').wait_for(timeout=10000)
        page = await console.page("#/d/web-only-1", url=web_node.endpoints.web)
        await page.locator("#status .COMPLETED").wait_for()


async def test_with_the_apis_certificate_the_console_speaks_tls_only(
    console: Console, pki: Any
) -> None:
    import ssl

    from fleet.web.tls import server_context

    web = console.node.servers["web"]
    assert isinstance(web, WebConsole)
    tls = WebConsole(web.services)
    url = await tls.start(
        "127.0.0.1", 0, ssl_context=server_context(pki.server_cert, pki.server_key)
    )
    try:
        assert url.startswith("https://")
        trusted = ssl.create_default_context(cafile=str(pki.ca))
        async with aiohttp.ClientSession() as http:
            async with http.get(url + "api/status", ssl=trusted) as r:
                assert r.status == 200 and "stream_head" in await r.json()
            with pytest.raises(aiohttp.ClientError):
                await http.get(url.replace("https", "http") + "api/status")
    finally:
        await tls.close()


async def _listed(console: Console, task_id: str) -> None:
    """Wait until the history graph lists ``task_id`` (the projection runs behind the store)."""

    async def found() -> bool:
        page = await console.client.list(page_size=200)
        return any(d.task_id == task_id for d in page.deliberations)

    await eventually(found, timeout=15, what=f"{task_id} never listed")


async def test_a_deep_link_to_a_filtered_sorted_search_survives_a_reload(
    console: Console,
) -> None:
    for i, word in enumerate(("zebra", "zebra", "yak")):
        d = rich_deliberation(f"web-find-{i}", agents=2, rounds=1, task=f"count {word}s {i}")
        await console.node.store.create(d)  # type: ignore[union-attr]
    await _listed(console, "web-find-2")
    page = await console.page("#/?q=ZEBRA&status=COMPLETED&sort=-task")
    rows = page.locator("#rows tr")
    await rows.first.wait_for()
    assert [await r.get_attribute("data-task") for r in await rows.all()] == [
        "web-find-1",
        "web-find-0",
    ]  # both zebras, none of the yaks, sorted by task descending
    assert await page.title() == "search “ZEBRA” · Fleet"
    assert await page.locator("#filters input[name=q]").input_value() == "ZEBRA"
    await page.locator("#deliberations th", has_text="task").first.click()  # ascending now
    assert page.url.endswith("sort=task")
    await page.reload()
    await rows.nth(1).wait_for()
    assert await rows.first.get_attribute("data-task") == "web-find-0"
    assert await page.locator("#filters select[name=status]").input_value() == "COMPLETED"
    # The header's search box (``/`` focuses it) searches task ids too.
    await page.keyboard.press("/")
    await page.keyboard.type("web-find-2")
    await page.keyboard.press("Enter")
    await page.wait_for_url("**#/?q=web-find-2")
    await page.locator('#rows tr[data-task="web-find-2"]').wait_for()
    assert await rows.count() == 1
    # Export: the table as shown, as CSV.
    async with page.expect_download() as download:
        await page.click('#main h1 [data-export="CSV"]')
    path = await (await download.value).path()
    lines = (await asyncio.to_thread(Path(path).read_text)).splitlines()
    assert lines[0].startswith("task,role,status") and lines[1].startswith("web-find-2,DEV,")


async def test_a_deliberation_at_a_version_and_a_calls_prompt_from_a_link(
    console: Console,
) -> None:
    await console.node.store.create(rich_deliberation("web-call-1", agents=3, rounds=2))  # type: ignore[union-attr]
    page = await console.page("#/d/web-call-1?v=6")
    await page.locator("#version-label", has_text="version 6 of").wait_for()
    assert await page.title() == "DEV · web-call-1 · v6 · Fleet"
    await page.locator("#timeline rect.call").nth(1).click()
    assert "call=1" in page.url and "v=6" in page.url
    call = page.locator("#call")
    await call.locator("#call-prompt pre").first.wait_for()
    prompt = await call.locator("#call-prompt").inner_text()
    assert "Task: fib(n) for dev-agent-2, round 0 <script>window.__xss=9</script>" in prompt
    facts = await call.locator("dl").inner_text()
    assert "0 (1 attempt)" in facts and "40 completion + 300 prompt" in facts
    assert "def fib(n):  # by dev-agent-2" in await call.locator("#call-answer").inner_text()
    assert await page.locator("#call script, #call img").count() == 0
    # The same view from its link, after a reload; ] steps the replay on by one.
    await page.reload()
    await page.locator("#call #call-prompt pre").first.wait_for()
    await page.keyboard.press("]")
    await page.locator("#version-label", has_text="version 7 of").wait_for()
    assert "v=7" in page.url
    assert await page.evaluate("window.__xss") is None

    # A real deliberation records what its agents were asked (ProposalReceived v4).
    await console.client.deliberate("write fib", task_id="web-call-2", num_agents=3)
    await _finished(console.client, "web-call-2")
    page = await console.page("#/d/web-call-2?call=0")
    await page.locator("#call #call-prompt pre").first.wait_for()
    assert "Task: write fib" in await page.locator("#call-prompt").inner_text()
    assert "attempt" in await page.locator("#call dl").inner_text()


async def test_markdown_renders_without_raw_html_or_script_links(console: Console) -> None:
    d = rich_deliberation("web-md-1", agents=2, rounds=1, content=MARKDOWN_XSS)
    await console.node.store.create(d)  # type: ignore[union-attr]
    page = await console.page("#/d/web-md-1?view=markdown")  # DEV's default is text
    card = page.locator('.proposal[data-agent="dev-agent-1"] .md')
    await card.locator("strong", has_text="memoisation").wait_for()
    assert await card.locator("pre", has_text="def fib(n):").count() == 1
    links = [await a.get_attribute("href") for a in await card.locator("a").all()]
    assert links == ["https://docs.python.org/3/"]
    text = await card.inner_text()
    assert "<script>window.__xss = 6</script>" in text and "onerror" in text
    assert await page.locator("#proposals script, #proposals img").count() == 0
    assert await page.evaluate("window.__xss") is None
    await page.click("#view-switch")  # as plain text: the same characters
    await page.locator('.proposal[data-agent="dev-agent-1"] pre.content').wait_for()
    assert "view=text" in page.url


async def test_cypher_from_history_draws_its_graph_and_dark_mode_persists(
    console: Console,
) -> None:
    await console.node.store.create(rich_deliberation("web-graph-1", agents=3, rounds=1))  # type: ignore[union-attr]
    await _listed(console, "web-graph-1")
    query = (
        "MATCH (a:Agent)-[r:PROPOSED]->(p:Proposal) WHERE p.deliberation_id <> '' "
        "RETURN a, r, p LIMIT 20"
    )
    page = await console.page("#/query")
    await page.locator("#labels button", has_text="Deliberation").wait_for()
    assert await page.locator("#rel-types button", has_text="CRITIQUED").count() == 1
    await page.fill("#cypher", query)
    await page.click("form.box button[type=submit]")
    await page.locator("#result-graph .gnode").first.wait_for(timeout=10000)
    shown = await page.title()
    assert shown.startswith("Cypher · MATCH (a:Agent)") and shown.endswith("… · Fleet")
    # From the history (this browser's), after a reload: it runs again and draws the graph.
    await page.goto(console.url + "#/query")
    await page.reload()
    await page.locator("#cypher-history button", has_text="PROPOSED").first.click()
    await page.locator("#result-graph .gnode").first.wait_for(timeout=10000)
    assert await page.locator("#result-graph .edge").count() >= 3
    labels = {await c.get_attribute("data-label") for c in await page.locator(".gnode").all()}
    assert {"Agent", "Proposal"} <= labels
    if SHOTS:
        await page.screenshot(path=f"{SHOTS}/web-cypher-graph.png", clip=TOP)

    # Dark mode follows the system, and the toggle's choice outlives a reload.
    await page.emulate_media(color_scheme="dark")
    bg = "getComputedStyle(document.body).backgroundColor"
    assert await page.evaluate(bg) == "rgb(13, 17, 23)"
    await page.emulate_media(color_scheme="light")
    assert await page.evaluate(bg) == "rgb(246, 247, 249)"
    await page.keyboard.press("t")  # system → dark
    assert await page.evaluate(bg) == "rgb(13, 17, 23)"
    await page.reload()
    await page.locator("#theme", has_text="dark").wait_for()
    assert await page.evaluate(bg) == "rgb(13, 17, 23)"
    # Keyboard: ? shows the shortcuts, g l goes to the list.
    await page.keyboard.press("?")
    assert "g c" in await page.locator("#help").inner_text()
    await page.keyboard.press("Escape")
    await page.keyboard.press("g")
    await page.keyboard.press("l")
    await page.locator("#rows tr").first.wait_for()
    await page.keyboard.press("j")
    assert await page.locator("#rows tr.selected").count() == 1
    if SHOTS:
        page = await console.page("#/d/web-graph-1?call=0")
        await page.emulate_media(color_scheme="dark")
        await page.locator("#call #call-prompt pre").first.wait_for()
        await page.locator("#call").screenshot(path=f"{SHOTS}/web-call-dark.png")


async def test_the_agents_view_shows_what_each_agent_is_doing(console: Console) -> None:
    page = await console.page("#/agents")
    await page.locator('#agents tr[data-agent="agent-dev-001"]').wait_for()
    statuses = {
        await r.get_attribute("data-status") for r in await page.locator("#agents tbody tr").all()
    }
    assert statuses <= {"idle", "busy", "failing", "unknown"} and statuses
    assert await page.title() == "Agents · Fleet"
    assert await page.locator("#failures, #no-failures").count() == 1
