"""Crashes and contention across processes: what the caller is told matches what is stored."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import IntegrityError, OperationalError

from eventstore.jetstream import OutcomeUnknownError
from fleet.embedded.nats import NatsServer
from tests.integration.eventstore._worker import Ledger

ROOT = Path(__file__).resolve().parents[3]


def _load(app: Application[uuid.UUID], oid: uuid.UUID) -> Ledger:
    for _ in range(200):
        try:
            ledger: Ledger = app.repository.get(oid)
            return ledger
        except OperationalError:
            time.sleep(0.05)
    raise AssertionError("server did not come back")


@pytest.mark.timeout(60)
def test_sigkill_during_concurrent_saves(private_nats_server: NatsServer) -> None:
    env = {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": private_nats_server.url,
        "NATS_STREAM": "KILLED",
        "NATS_TIMEOUT": "1",
    }
    app = Application[uuid.UUID](env=env)
    writers = 6
    ledgers = [Ledger() for _ in range(writers)]
    app.save(*ledgers)
    outcomes: list[list[tuple[str, str, str]]] = [[] for _ in range(writers)]  # (token, outcome)
    stop = threading.Event()

    def write(i: int) -> None:
        ledger = ledgers[i]
        while not stop.is_set():
            token = uuid.uuid4().hex
            ledger.add(token)
            try:
                app.save(ledger)
                outcomes[i].append((token, "ok", ""))
                continue
            except OutcomeUnknownError as e:
                outcomes[i].append((token, "unknown", str(e)))
            except (OperationalError, IntegrityError) as e:
                outcomes[i].append((token, "failed", repr(e)))
            ledger = _load(app, ledger.id)  # the failed save consumed the pending event

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)
        private_nats_server.kill()  # saves are in flight: their acknowledgements are lost
        time.sleep(0.5)
        private_nats_server.start()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)

        for i, ledger in enumerate(ledgers):
            stored = _load(app, ledger.id).tokens
            assert len(stored) == len(set(stored)), "a token stored twice"
            by_outcome: dict[str, set[str]] = {"ok": set(), "unknown": set(), "failed": set()}
            for token, outcome, _ in outcomes[i]:
                by_outcome[outcome].add(token)
            assert by_outcome["ok"] <= set(stored), "an acknowledged save was lost"
            # A save that raised "failed" was certainly not stored; "unknown" says it may be.
            assert not (by_outcome["failed"] & set(stored)), "a failed save was stored"
            assert set(stored) <= by_outcome["ok"] | by_outcome["unknown"]
        total = sum(len(o) for o in outcomes)
        ok = sum(1 for o in outcomes for _, outcome, _ in o if outcome == "ok")
        assert ok > writers * 5, f"too few saves to prove anything ({ok} of {total})"
    finally:
        stop.set()
        app.close()


@pytest.mark.timeout(60)
def test_two_processes_save_the_same_aggregate(nats_url: str, nats_stream: str, tmp_path: Path):
    env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": nats_url}
    env["NATS_STREAM"] = nats_stream
    app = Application[uuid.UUID](env=env)
    n = 25
    try:
        ledger = Ledger()
        app.save(ledger)
        start = tmp_path / "go"
        argv = [sys.executable, "-m", "tests.integration.eventstore._worker"]
        argv += [nats_url, nats_stream, str(ledger.id), str(n), str(start)]
        procs = [
            subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        deadline = time.monotonic() + 30  # both import and connect, then start together
        while len(list(tmp_path.glob("go.ready.*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        start.touch()
        results: list[dict[str, Any]] = []
        for p in procs:
            out, errs = p.communicate(timeout=45)
            assert p.returncode == 0, errs.decode()[-2000:]
            results.append(json.loads(out.decode().strip().splitlines()[-1]))
        won = [set(r["won"]) for r in results]
        assert not (won[0] & won[1]), "two processes won the same version"
        assert won[0] | won[1] == set(range(2, 2 * n + 2)), "a version nobody won"
        assert sum(r["conflicts"] for r in results) > 0, "no contention: the test proves nothing"
        final: Ledger = app.repository.get(ledger.id)
        assert final.version == 2 * n + 1
        assert len(set(final.tokens)) == 2 * n
    finally:
        app.close()
