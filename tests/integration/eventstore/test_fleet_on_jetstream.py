"""Fleet's own aggregates on JetStream: upcasting, snapshots, replay and ``fleet events tail``."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import nats
import pytest
from eventsourcing.application import Application
from eventsourcing.domain import MutableOrImmutableAggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from aggregates import AgentAnswer, AgentId, Deliberation
from application.app import FleetApplication
from application.replay import replay
from application.stores import ApplicationDeliberationStore
from fleet.cli import main
from tests.support.aggregates import Ledger
from tests.support.deliberations import requested
from tests.support.jetstream import append_garbage
from tests.support.waiting import eventually, eventually_sync

ROOT = Path(__file__).resolve().parents[3]


def _request(task_id: str, *, agents: int = 1, rounds: int = 1) -> Deliberation:
    return requested(task_id, task="fib", num_agents=agents, rounds=rounds)


def _propose(d: Deliberation, agent: AgentId, round_no: int) -> None:
    d.receive_proposal(
        agent_id=agent,
        round=round_no,
        answer=AgentAnswer(
            content=f"def fib(n): ...  # {agent} r{round_no}", model="m", tokens=7, latency_ms=12
        ),
    )


def test_version_1_events_stored_in_jetstream_upcast_on_replay(nats_env: dict[str, str]) -> None:
    app = FleetApplication(env=nats_env)
    try:
        d = _request("old-1")
        d.start()
        app.save(d)
        # What a Fleet before class_version 2 wrote: no prompt_tokens, no sampling, no
        # class_version; stored as raw bytes in the JetStream stream.
        v1_state = {
            "originator_id": {"_type_": "uuid_hex", "_data_": d.id.hex},
            "originator_version": d.version + 1,
            "timestamp": {"_type_": "datetime_iso", "_data_": datetime.now(tz=UTC).isoformat()},
            "agent_id": "dev-agent-1",
            "round": 0,
            "content": "def fib(n): ...",
            "model": "old-model",
            "tokens": 7,
            "latency_ms": 12,
        }
        app.recorder.insert_events(
            [
                StoredEvent(
                    originator_id=d.id,
                    originator_version=d.version + 1,
                    topic=get_topic(Deliberation.ProposalReceived),
                    state=json.dumps(v1_state).encode(),
                )
            ]
        )
    finally:
        app.close()
    fresh = FleetApplication(env=nats_env)  # a new process's view: nothing cached
    try:
        replayed: Deliberation = fresh.repository.get(d.id)
        p = replayed.proposals[(AgentId("dev-agent-1"), 0)]
        assert (p.content, p.model, p.tokens) == ("def fib(n): ...", "old-model", 7)
        assert (p.prompt_tokens, p.temperature, p.seed, p.persona) == (0, None, None, "")
        assert replayed.version == d.version + 1
    finally:
        fresh.close()


class LedgerApplication(Application[Any]):
    snapshotting_intervals: ClassVar[dict[type[MutableOrImmutableAggregate[Any]], int] | None] = {
        Ledger: 50
    }


def _spy_select_events(app: Application[Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    real = app.recorder.select_events

    def spy(originator_id: Any, **kw: Any) -> Any:
        calls.append(kw)
        return real(originator_id, **kw)

    app.recorder.select_events = spy  # type: ignore[method-assign]
    return calls


def test_an_aggregate_past_its_interval_loads_from_a_snapshot(nats_env: dict[str, str]) -> None:
    """FleetApplication's policy ({Deliberation: 50}) on JetStream, with a JSON-friendly state."""
    app = LedgerApplication(env=nats_env)
    try:
        t = Ledger()
        for i in range(60):
            t.add(f"item-{i}")
            app.save(t)  # one save per event, as Fleet's dispatcher saves answers
        c = app.factory.connection  # type: ignore[attr-defined]
        snapshots = c.call(c.log.read(c.subject("s", t.id)), "snapshots")
        assert len(snapshots) == 1  # the snapshot subject holds one, at version 50
        assert app.snapshots is not None
        assert [s.originator_version for s in app.snapshots.get(t.id)] == [50]
        calls = _spy_select_events(app)
        loaded: Ledger = app.repository.get(t.id)
        assert (loaded.version, loaded.tokens) == (61, t.tokens)
        assert calls and calls[-1].get("gt") == 50  # only the events after the snapshot
    finally:
        app.close()


def test_a_long_deliberation_loads_from_its_snapshot(nats_env: dict[str, str]) -> None:
    app = FleetApplication(env=nats_env)
    try:
        d = _request("long-1", agents=16, rounds=5)
        d.start()
        app.save(d)
        for round_no in range(4):
            for agent in d.default_agents():
                _propose(d, agent, round_no)
                app.save(d)  # one save per answer, as the dispatcher does
        assert d.version == 2 + 16 * 4 > 50
        assert app.snapshots is not None
        assert [s.originator_version for s in app.snapshots.get(d.id)] == [50]
        calls = _spy_select_events(app)
        loaded: Deliberation = app.repository.get(d.id)
        assert loaded.version == d.version and loaded.proposals == d.proposals
        assert calls[-1].get("gt") == 50  # only the events after the snapshot
    finally:
        app.close()


@pytest.fixture
def cli_env(
    nats_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[str, str]:
    monkeypatch.setenv("NATS_URL", nats_env["NATS_URL"])
    monkeypatch.setenv("FLEET_STREAM", nats_env["NATS_STREAM"])
    monkeypatch.setenv("FLEET_DATA_DIR", str(tmp_path))
    return nats_env


def _two_deliberations(env: dict[str, str]) -> tuple[Deliberation, Deliberation]:
    app = FleetApplication(env=env)
    try:
        a, b = _request("cli-a", agents=2), _request("cli-b")
        a.start()
        app.save(a)
        _propose(a, a.default_agents()[0], 0)
        app.save(a, b)
        return a, b
    finally:
        app.close()


def test_replay_to_version(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = _two_deliberations(cli_env)
    h = replay(cli_env["NATS_URL"], cli_env["NATS_STREAM"], "cli-a", to_version=2)
    assert h.deliberation.version == 2 and not h.deliberation.proposals
    assert [e.type for e in h.entries] == ["Requested", "Started"]

    assert main(["replay", "cli-a", "--to-version", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["version"], out["status"], out["proposals"]) == (2, "IN_PROGRESS", [])
    assert main(["replay", "cli-a", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == a.version == 3 and len(out["proposals"]) == 1
    assert main(["replay", "no-such-task"]) == 1


def test_events_tail_from_a_sequence(
    cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _two_deliberations(cli_env)
    assert main(["events", "tail", "--from-seq", "2", "--count", "3", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(x["seq"], x["type"]) for x in lines] == [
        (2, "Started"),
        (3, "ProposalReceived"),
        (4, "Requested"),
    ]
    assert lines[0]["aggregate_id"] == str(a.id) and lines[2]["aggregate_id"] == str(b.id)
    assert "dev-agent-1 round 0" in lines[1]["summary"]

    assert main(["events", "tail", "--from-seq", "1", "--count", "1"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.split()[0] == "1" and str(a.id) in line and "Requested" in line


def _following(env: dict[str, str]) -> None:
    """Wait until a reader follows the event stream (its consumer exists)."""

    async def consumers() -> int:
        nc = await nats.connect(env["NATS_URL"])
        try:
            return int((await nc.jetstream().stream_info(env["NATS_STREAM"])).state.consumer_count)
        finally:
            await nc.close()

    eventually_sync(
        lambda: asyncio.run(consumers()) > 0,
        timeout=30.0,
        interval=0.1,
        what="nothing follows the event stream",
        ignoring=(nats.js.errors.NotFoundError,),
    )


def _as_from_a_shell() -> None:
    """In the child, before exec: SIGINT as a shell leaves it (default, not blocked). A child
    inherits an ignored or blocked SIGINT from the process that starts it, and then Python
    installs no Ctrl-C handler at all; whatever ran earlier in this test process must not
    decide whether the tail can be stopped."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _stacks(pid: int) -> str:
    """Every thread's stack in process ``pid`` (py-spy, installed with Ray), for a failure that
    cannot be reproduced at will."""
    spy = Path(sys.executable).with_name("py-spy")
    try:
        dump = subprocess.run(
            [str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(no stacks: {e})"
    return dump.stdout + dump.stderr


@pytest.mark.timeout(120)
def test_events_tail_follows_live_and_stops_on_ctrl_c(cli_env: dict[str, str]) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    tail = subprocess.Popen(
        [sys.executable, "-m", "fleet.cli", "events", "tail", "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_shell,
    )
    try:
        _following(cli_env)  # only new events are shown: write once the tail follows
        a, _ = _two_deliberations(cli_env)
        assert tail.stdout is not None
        first = json.loads(tail.stdout.readline())
        assert (first["seq"], first["type"], first["aggregate_id"]) == (1, "Requested", str(a.id))
        tail.send_signal(signal.SIGINT)
        try:
            _, err = tail.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            stacks = _stacks(tail.pid)
            pytest.fail(f"the tail did not stop on Ctrl-C in 30 s; its threads:\n{stacks}")
        assert tail.returncode == 130
        assert "Traceback" not in err
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()


class _FullReplay(FleetApplication):
    """The same application (its name, so its settings) with snapshots off: every load replays
    the aggregate's events from version 1."""

    name = "Fleet"
    snapshotting_intervals = None


async def _snapshots_of(app: FleetApplication, agg_id: Any) -> list[Any]:
    """The aggregate's snapshots, once there is one (waits up to 5 s)."""
    snapshots = app.snapshots
    assert snapshots is not None
    return await eventually(
        lambda: list(snapshots.get(agg_id)), timeout=5.0, interval=0.05, what="no snapshot"
    )


async def test_the_group_commit_path_snapshots_and_loads_use_them(
    nats_env: dict[str, str],
) -> None:
    """The live dispatcher saves through the ledger's group commit, which takes snapshots
    itself: a deliberation driven past the interval (50) by concurrent updates has a snapshot
    at version 50, equal to the replay up to it, and a load starts from it."""
    app = FleetApplication(env=nats_env)
    full = _FullReplay(env=nats_env)
    try:
        store = ApplicationDeliberationStore(app)  # group commit is the default
        # 13 agents: version 50 falls inside a round's group (versions 42..54), not at its end.
        d = _request("gc-snapshot", agents=13, rounds=5)
        await store.create(d)
        await store.update(d.id, lambda x: x.start())
        for round_no in range(4):
            await asyncio.gather(
                *(
                    store.update(d.id, functools.partial(_propose, agent=a, round_no=round_no))
                    for a in d.default_agents()
                )
            )
        assert store.groups_committed < 1 + 13 * 4, "the updates were not grouped"

        # Callers are answered once their events are stored; the snapshot follows in a worker
        # thread (it only shortens later replays), so it is awaited here.
        snapshots = await _snapshots_of(app, d.id)
        assert [s.originator_version for s in snapshots] == [50]
        snapshot = snapshots[0]
        at_50 = full.repository.get(d.id, version=50)
        assert vars(snapshot.mutate(None)) == vars(at_50)

        calls = _spy_select_events(app)
        loaded: Deliberation = app.repository.get(d.id)
        assert calls[-1].get("gt") == 50, "the load did not start from the snapshot"
        replayed: Deliberation = full.repository.get(d.id)
        assert loaded.version == replayed.version == 2 + 13 * 4
        assert vars(loaded) == vars(replayed)
    finally:
        full.close()
        app.close()


def test_events_tail_names_a_bad_message_and_goes_on(
    cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Two bad messages between good ones: bytes that are no event at all (written by something
    else), and an event of a type this Fleet does not know. Each is reported on stderr with its
    stream sequence and subject; the tail prints every good event, before and after them."""
    stream = cli_env["NATS_STREAM"]
    _two_deliberations(cli_env)  # sequences 1..4
    garbage_subject = f"{stream}.e.{uuid.uuid4()}"

    seq = asyncio.run(append_garbage(cli_env["NATS_URL"], garbage_subject, b"\xff no event"))
    assert seq == 5
    app = FleetApplication(env=cli_env)
    try:
        unknown = uuid.uuid4()
        stored = StoredEvent(
            originator_id=unknown, originator_version=1, topic="gone.module:Gone", state=b"{}"
        )
        assert app.recorder.insert_events([stored]) == [6]
        app.save(_request("cli-after"))  # sequence 7
    finally:
        app.close()

    assert main(["events", "tail", "--from-seq", "1", "--count", "5", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["seq"] for line in out.splitlines()] == [1, 2, 3, 4, 7]
    errors = err.splitlines()
    assert len(errors) == 2, err
    assert "stream sequence 5" in errors[0] and repr(garbage_subject) in errors[0]
    assert "stream sequence 6" in errors[1] and f"'{stream}.e.{unknown}'" in errors[1]
    assert "gone.module:Gone" in errors[1]
