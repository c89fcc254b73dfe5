"""Projection figures, end to end from the real event store, each beside its raw ceiling.

Run: ``.venv/bin/python bench/projections_bench.py [--graph ladybug|neo4j|both] [--events 100000]
[--live-seconds 10]``

Everything is private: a nats-server (JetStream, file storage) and a redis/valkey-server on free
loopback ports, a LadybugDB directory and, for ``--graph neo4j|both``, Fleet's private Neo4j
Community server (``fleet.embedded.neo4j``, its default heap and page cache; ``make neo4j``
first), all in a temporary directory removed at the end. With ``both`` the engines are measured
one after the other in the same run, LadybugDB first, so one never competes with the other for
the cores; each graph figure is printed beside its ceiling on the same engine. Events
are written through ``FleetApplication`` with ``PERSISTENCE_MODULE=eventstore.jetstream`` (each
deliberation: requested, started, 3 proposals, 3 scores, completed = 9 events; 100 deliberations
per atomic batch), then:

1. graph catch-up, per engine: a ``ProjectorRunner`` over ``GraphProjection`` from sequence 1 to
   the head, reading the stream. Ceiling: the same Cypher and the same rows (every event's
   statements, precomputed), each statement ``UNWIND``-ed over a whole chunk of the same number
   of events in one transaction per chunk, no ordering rules, no position, no fence, no reading,
   into an empty graph of the same engine (on Neo4j a private server of its own, stopped before
   the projection's starts, so that both runs start from a cold JVM and an empty store).
2. cache catch-up: ``CacheProjection(ValkeyDeliberationBoard)`` from sequence 1. Ceiling: one
   ``HSET`` of the same hash per event (the entry after that event, precomputed), pipelined in
   chunks of the same size, no reads, no script, no position.
3. live lag, per engine: the graph runner (and, in the first, the cache runner) following
   while events are saved one per call at a steady rate (by
   ``--savers`` threads, each on its own deliberations, paced to rate / savers). An event's lag is
   the time its projection committed the batch holding it (the runner's ``on_batch``, called
   after the commit, so a reader sees it) minus the time JetStream stored it (the stream's own
   timestamp, read back after the run; same host clock). Ceiling: a bare subscription of the
   same recorder, following at the same time, that only notes when each event reached it: no
   projection can see an event sooner. The ceiling data of 1 and 2 is dropped before this phase,
   so that the process's heap (and its garbage collector's pauses) is that of a runner.

Each catch-up also prints its pace by fifth of the events beside raw's: a fresh JVM compiles
its hot code in the first fifth, on the same two cores, and the rest shows the steady state.

Goals: catch-up >= 40% of raw on LadybugDB, >= 80% on Neo4j; live p99 < 100 ms on both graphs
(Neo4j checkpoints in the background; LadybugDB's folds stall commits, and miss it) and on the
cache.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

from aggregates import AgentAnswer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
import valkey
from neo4j import GraphDatabase

from agent_runtime.cpus import cpu_budget
from aggregates import AgentId, CheckOutcome, Deliberation
from application.app import FleetApplication
from fleet.embedded.nats import NatsServer
from fleet.embedded.neo4j import NEO4J_VERSION, Neo4jServer, generate_password, neo4j_jars
from fleet.embedded.valkey import ValkeyServer
from projectors.cache.codec import encode_view
from projectors.cache.fold import evolve
from projectors.cache.projection import CacheProjection
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.graph.batch import Execution
from projectors.graph.ladybug import CHECKPOINT_THRESHOLD, LIVE_CHECKPOINT_THRESHOLD, LadybugGraph
from projectors.graph.neo4j import Neo4jGraph
from projectors.graph.port import DecisionGraph
from projectors.graph.projection import GraphProjection
from projectors.graph.statements import statements_for
from projectors.runner import DEFAULT_BATCH_SIZE, ProjectorRunner

STREAM = "BENCH"
PER_SAVE = 100  # deliberations per atomic batch (9 events each: 900 < JetStream's 1000)


def deliberation_steps(n: int) -> list[Deliberation]:
    """``n`` completed deliberations, built in memory (their events pending)."""
    out = []
    for i in range(n):
        d = Deliberation.request(
            task_id=f"bench-{uuid4().hex[:10]}",
            task="Write a function that adds two numbers",
            role="DEV",
            num_agents=3,
            rounds=1,
            requested_at=datetime.now(UTC),
            timeout_seconds=600,
            rubric="",
            plan_id=f"plan-{i % 50}",
            story_id="story",
            requested_by="bench",
        )
        d.start()
        for k, a in enumerate(d.agents):
            d.receive_proposal(
                agent_id=AgentId(a),
                round=0,
                answer=AgentAnswer(
                    content=f"def add(a, b): return a + b  # {k}",
                    model="bench",
                    tokens=20 + k,
                    latency_ms=5 + k,
                ),
            )
        for k, a in enumerate(d.agents):
            check = CheckOutcome(check_type="lint", passed=True, score=0.5, message="ok")
            d.score(agent_id=AgentId(a), score=0.3 + 0.2 * k, checks=[check])
        d.complete()
        out.append(d)
    return out


def write_events(app: FleetApplication, total: int) -> int:
    need = (total + 8) // 9
    t0 = time.perf_counter()
    for start in range(0, need, PER_SAVE):
        app.save(*deliberation_steps(min(PER_SAVE, need - start)))
    head = app.recorder.max_notification_id() or 0
    dt = time.perf_counter() - t0
    print(f"wrote {head} events in {dt:.1f} s ({head / dt:,.0f} events/s) into JetStream")
    return head


def read_all(app: FleetApplication, head: int) -> list[tuple[object, int]]:
    out: list[tuple[object, int]] = []
    start = 1
    while start <= head:
        page = app.recorder.select_notifications(start, 1000, stop=head)
        if not page:
            break
        out += [(app.mapper.to_domain_event(n), n.id) for n in page]
        start = page[-1].id + 1
    return out


Marks = list[tuple[float, int]]
"""(seconds since the start, events done) after each committed batch: the pace of a run."""


def catch_up(app: FleetApplication, projection: object, head: int, marks: Marks) -> float:
    t0 = time.perf_counter()

    def mark(first: int, last: int, applied: int) -> None:
        marks.append((time.perf_counter() - t0, last))

    with ProjectorRunner(app, projection, on_batch=mark) as runner:  # type: ignore[arg-type]
        runner.wait(head, timeout=1800)
    return time.perf_counter() - t0


def _fifths(marks: Marks, head: int) -> list[float]:
    """Events/s over each fifth of the events, from a run's marks: where its time went (a
    fresh JVM compiles its hot code in the first fifth, on the same two cores)."""
    out, t_prev, n_prev = [], 0.0, 0
    for k in range(1, 6):
        t, n = next(((t, n) for t, n in marks if n >= head * k // 5), marks[-1])
        out.append((n - n_prev) / max(t - t_prev, 1e-9))
        t_prev, n_prev = t, n
    return out


def _chunks(events: list[tuple[object, int]], chunk: int) -> list[list[Execution]]:
    """The raw ceiling's work: per chunk, each statement's rows in one ``UNWIND`` execution."""
    chunks = []
    for i in range(0, len(events), chunk):
        by_text: dict[str, Execution] = {}
        for e, p in events[i : i + chunk]:
            for s in statements_for(e, p):
                by_text.setdefault(s.cypher, Execution(s.cypher)).rows.append(s.params)
        chunks.append(list(by_text.values()))
    return chunks


def raw_ladybug(path: Path, events: list[tuple[object, int]], chunk: int, marks: Marks) -> float:
    graph = LadybugGraph(path)
    chunks = _chunks(events, chunk)
    conn = graph._write  # the raw ceiling: the bare connection, nothing of ours around it
    t0 = time.perf_counter()
    for k, executions in enumerate(chunks, 1):
        conn.execute("BEGIN TRANSACTION")
        for x in executions:
            conn.execute(x.cypher, x.params)
        conn.execute("COMMIT")
        marks.append((time.perf_counter() - t0, min(k * chunk, len(events))))
    dt = time.perf_counter() - t0
    graph.close()
    return dt


def raw_neo4j(
    server: Neo4jServer, events: list[tuple[object, int]], chunk: int, marks: Marks
) -> float:
    """The same rows through the bare driver: one explicit transaction per chunk, in an empty
    database with Fleet's constraints (without them each ``MERGE`` scans its label)."""
    chunks = _chunks(events, chunk)
    driver = GraphDatabase.driver(server.uri, auth=server.auth)
    try:
        Neo4jGraph(driver).ensure_schema()
        t0 = time.perf_counter()
        with driver.session() as session:
            for k, executions in enumerate(chunks, 1):
                with session.begin_transaction() as tx:
                    for x in executions:
                        tx.run(x.cypher, x.params).consume()
                    tx.commit()
                marks.append((time.perf_counter() - t0, min(k * chunk, len(events))))
        return time.perf_counter() - t0
    finally:
        driver.close()


def raw_cache(client: valkey.Valkey, events: list[tuple[object, int]], chunk: int) -> float:
    views: dict[object, object] = {}
    writes = []
    for e, p in events:
        d_id = e.originator_id  # type: ignore[attr-defined]
        view = evolve(views.get(d_id), e)  # type: ignore[arg-type]
        views[d_id] = view
        writes.append((f"raw:deliberation:{d_id}", encode_view(view, position=p)))  # type: ignore[arg-type]
    t0 = time.perf_counter()
    for i in range(0, len(writes), chunk):
        pipe = client.pipeline(transaction=False)
        for key, fields in writes[i : i + chunk]:
            pipe.hset(key, mapping=fields)
        pipe.execute()  # type: ignore[no-untyped-call]
    return time.perf_counter() - t0


def stored_times(url: str, positions: list[int]) -> dict[int, float]:
    """When JetStream stored each of ``positions`` (seconds since the epoch, server clock)."""

    async def read() -> dict[int, float]:
        nc = await nats.connect(url)
        try:
            jsm = nc.jetstream()._jsm
            out: dict[int, float] = {}
            for i in range(0, len(positions), 200):
                chunk = positions[i : i + 200]
                msgs = await asyncio.gather(*(jsm.get_msg(STREAM, p) for p in chunk))
                out.update({p: m.time.timestamp() for p, m in zip(chunk, msgs, strict=True)})  # type: ignore[union-attr]
            return out
        finally:
            await nc.close()

    return asyncio.run(read())


def _ms(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, int(len(values) * q) - 1))] * 1000


def _figures(values: list[float]) -> str:
    values.sort()
    return (
        f"p50 {_ms(values, 0.5):6.1f} ms  p99 {_ms(values, 0.99):6.1f} ms  "
        f"max {values[-1] * 1000:6.1f} ms ({len(values)} events)"
    )


LAG_GOAL_MS = {"ladybug": 100.0, "neo4j": 100.0, "cache": 100.0}
CATCH_UP_GOAL = {"ladybug": 0.40, "neo4j": 0.80}


def live(
    app: FleetApplication,
    url: str,
    engine: str,
    graph: DecisionGraph,
    board: object | None,
    rate: int,
    seconds: float,
    savers: int,
) -> None:
    """Live lag of the graph on ``engine`` (and of the cache, when ``board`` is given)."""
    batches: dict[str, list[tuple[int, int, float]]] = {engine: []}
    if board is not None:
        batches["cache"] = []

    def on_batch(name: str) -> Callable[[int, int, int], None]:
        def record(first: int, last: int, applied: int) -> None:
            batches[name].append((first, last, time.time()))  # list.append is atomic

        return record

    runners = [ProjectorRunner(app, GraphProjection(graph), on_batch=on_batch(engine))]
    if board is not None:
        runners.append(ProjectorRunner(app, CacheProjection(board), on_batch=on_batch("cache")))  # type: ignore[arg-type]
    for r in runners:
        r.start()
    head = app.recorder.max_notification_id() or 0
    for r in runners:
        r.wait(head, timeout=600)
    time.sleep(2.0)  # settle: the runners' first idle hook (after idle_s) passes before the stream
    for values in batches.values():
        values.clear()

    delivered: dict[int, float] = {}  # the ceiling: a bare subscription that only notes arrivals
    subscription = app.recorder.subscribe(gt=head)

    def bare() -> None:
        with subscription:
            for n in subscription:
                delivered[n.id] = time.time()

    watcher = threading.Thread(target=bare, daemon=True)
    watcher.start()
    total = int(rate * seconds)
    per = total // savers
    saved: list[list[int]] = [[] for _ in range(savers)]

    def saver(k: int) -> None:
        # each saver owns its deliberations (events of one aggregate stay in order), paced at
        # rate / savers, offset so that the savers interleave
        pending: list[object] = []
        for i in range(per):
            if not pending:
                pending = list(deliberation_steps(1)[0].collect_events())
            event = pending.pop(0)
            wait = t0 + (i * savers + k) / rate - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            recordings = app.recorder.insert_events([app.mapper.to_stored_event(event)])  # type: ignore[arg-type]
            saved[k] += recordings or []

    load_before = os.getloadavg()
    log_before = graph.log_bytes() if isinstance(graph, LadybugGraph) else 0
    t0 = time.perf_counter()
    threads = [threading.Thread(target=saver, args=(k,)) for k in range(savers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    positions = sorted(p for ps in saved for p in ps)
    achieved = len(positions) / (time.perf_counter() - t0)
    last = positions[-1]
    for r in runners:
        r.wait(last, timeout=60)
        r.close()
    deadline = time.monotonic() + 10
    while last not in delivered and time.monotonic() < deadline:
        time.sleep(0.01)
    subscription.stop()
    load_after = os.getloadavg()
    log_after = graph.log_bytes() if isinstance(graph, LadybugGraph) else 0
    stored = stored_times(url, positions)
    print(
        f"\nlive ({engine}, graph of {positions[0] - 1:,} events): {len(positions)} events saved "
        f"one per call by {savers} savers at {achieved:,.0f}/s (target {rate}/s); load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    if isinstance(graph, LadybugGraph):
        print(
            f"  graph log {log_before / 2**20:.1f} -> {log_after / 2**20:.1f} MiB (the engine "
            f"checkpoints, stalling commits, past {CHECKPOINT_THRESHOLD / 2**20:.0f} MiB in "
            f"catch-up batches, {LIVE_CHECKPOINT_THRESHOLD / 2**10:.0f} KiB in live ones)"
        )
    raw = [delivered[p] - stored[p] for p in positions if p in delivered]
    raw_p99 = sorted(raw)[max(0, int(len(raw) * 0.99) - 1)] * 1000
    print(f"  raw   bare subscription, delivered: {_figures(raw)}")
    for name, applied in batches.items():
        lags = []
        sizes = []
        for first, end, at in applied:
            mine = [at - stored[p] for p in range(first, end + 1) if p in stored]
            lags += mine
            if mine:
                sizes.append(len(mine))
        sizes.sort()
        p99 = _ms(sorted(lags), 0.99)
        goal = LAG_GOAL_MS[name]
        verdict = "OK" if p99 < goal else f"ABOVE {goal:.0f} ms"
        print(
            f"  {name:7s} lag, committed:            {_figures(lags)}  "
            f"{p99 - raw_p99:+.1f} ms over raw at p99 ({p99 / max(raw_p99, 0.001):.1f}x); "
            f"target p99 < {goal:.0f} ms: {verdict}"
        )
        print(
            f"        {len(sizes)} commits, events per commit p50 {sizes[len(sizes) // 2]}, "
            f"max {sizes[-1]}"
        )


def _catch_up_figures(
    engine: str, head: int, dt: float, raw: float, fleet_marks: Marks, raw_marks: Marks
) -> None:
    goal = CATCH_UP_GOAL[engine]
    ratio = raw / dt
    print(f"\ngraph catch-up ({engine}): {head} events in {dt:.1f} s = {head / dt:,.0f} events/s")
    print(f"  raw batched UNWIND MERGE, same rows: {raw:.1f} s = {head / raw:,.0f} events/s")
    verdict = "OK" if ratio >= goal else "NOT MET"
    print(f"  ratio {ratio:.0%} of raw (target >= {goal:.0%}): {verdict}")
    ours, theirs = _fifths(fleet_marks, head), _fifths(raw_marks, head)
    print("  by fifth of the events, events/s (Fleet / raw = ratio):")
    pairs = zip(ours, theirs, strict=True)
    print("    " + "; ".join(f"{a:,.0f} / {b:,.0f} = {a / b:.2f}" for a, b in pairs))


def _neo4j_server(tmp: Path, name: str) -> Neo4jServer:
    t = time.perf_counter()
    server = Neo4jServer(tmp / name, password=generate_password())
    server.start(timeout=600)  # a JVM and two databases: minutes on a busy machine
    print(f"  ({name}: a private Neo4j {NEO4J_VERSION} started in {time.perf_counter() - t:.0f} s)")
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--graph",
        choices=("ladybug", "neo4j", "both"),
        default="both",
        help="the graph engine(s) to measure, one after the other (default both)",
    )
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--live-seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH_SIZE)
    ap.add_argument("--savers", type=int, default=4, help="concurrent savers in the live phase")
    args = ap.parse_args()
    # The driver logs a warning for each property the database has not seen yet (a fresh
    # Projection node's fence): noise here, not a figure.
    logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
    engines = ("ladybug", "neo4j") if args.graph == "both" else (args.graph,)
    if "neo4j" in engines:
        neo4j_jars()  # missing jars: say so (and how to fix it) before minutes of set-up
    tmp = Path(tempfile.mkdtemp(prefix="fleet-projbench-"))
    server = NatsServer(tmp / "nats")
    vk = ValkeyServer(tmp / "valkey")
    server.start()
    vk.start()
    app = FleetApplication(
        {
            "PERSISTENCE_MODULE": "eventstore.jetstream",
            "NATS_URL": server.url,
            "NATS_STREAM": STREAM,
        }
    )
    client = valkey.Valkey.from_url(vk.url)
    stack = contextlib.ExitStack()  # the Neo4j side's server and driver
    try:
        print(
            f"machine: {sys.platform}, {cpu_budget().describe()}, load average "
            f"{os.getloadavg()[0]:.2f}, batch size {args.batch}, graphs {', '.join(engines)}, "
            f"nats {server.url}, cache {vk.url}"
        )
        head = write_events(app, args.events)
        t = time.perf_counter()
        events = read_all(app, head)
        print(f"read back {len(events)} events in {time.perf_counter() - t:.1f} s (for ceilings)")

        board = ValkeyDeliberationBoard(client, key_prefix="bench:", cleanup_seconds=0)
        dt = catch_up(app, CacheProjection(board), head, [])
        raw = raw_cache(client, events, args.batch)
        print(f"\ncache catch-up: {head} events in {dt:.1f} s = {head / dt:,.0f} events/s")
        print(f"  raw pipelined HSET, same keys: {raw:.1f} s = {head / raw:,.0f} events/s")
        print(f"  ratio {raw / dt:.0%} of raw (target >= 40%)")

        graphs: dict[str, DecisionGraph] = {}
        for engine in engines:  # catch-up and its ceiling, engine by engine
            fleet_marks: Marks = []
            raw_marks: Marks = []
            if engine == "ladybug":
                graphs[engine] = LadybugGraph(tmp / "graph" / "g.lbug")
                dt = catch_up(app, GraphProjection(graphs[engine]), head, fleet_marks)
                raw = raw_ladybug(tmp / "raw" / "g.lbug", events, args.batch, raw_marks)
            else:
                raw_server = _neo4j_server(tmp, "neo4j-raw")
                try:
                    raw = raw_neo4j(raw_server, events, args.batch, raw_marks)
                finally:
                    raw_server.stop()
                neo = _neo4j_server(tmp, "neo4j")  # kept for the live phase
                stack.callback(neo.stop)
                driver = GraphDatabase.driver(neo.uri, auth=neo.auth)
                stack.callback(driver.close)
                graphs[engine] = Neo4jGraph(driver)
                graphs[engine].ensure_schema()
                dt = catch_up(app, GraphProjection(graphs[engine]), head, fleet_marks)
            _catch_up_figures(engine, head, dt, raw, fleet_marks, raw_marks)

        del events  # the ceilings' data: the live phase runs with a runner's heap, not ours
        gc.collect()
        cache: ValkeyDeliberationBoard | None = board  # its live lag beside the first graph's
        for engine, graph in graphs.items():
            live(app, server.url, engine, graph, cache, args.rate, args.live_seconds, args.savers)
            cache = None
            graph.close()
    finally:
        stack.close()
        client.close()  # type: ignore[no-untyped-call]
        app.close()
        vk.stop()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
