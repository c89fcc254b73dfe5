"""Crashes and contention across processes: what the caller is told matches what is stored."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import OperationalError

from eventstore._lost_acks import _RESOLVE_WINDOW
from fleet.embedded.nats import NatsServer
from tests.support.aggregates import Ledger
from tests.support.waiting import eventually_sync

ROOT = Path(__file__).resolve().parents[3]


def _load(app: Application[uuid.UUID], oid: uuid.UUID) -> Ledger:
    ledger: Ledger = eventually_sync(
        lambda: app.repository.get(oid),
        timeout=10.0,
        interval=0.05,
        what="server did not come back",
        ignoring=(OperationalError,),
    )
    return ledger


def _freeze(server: NatsServer, seconds: float) -> None:
    """Stop the server's process (SIGSTOP) for ``seconds``: it reads nothing and answers
    nothing, so what was sent to it waits in its socket and lands when it resumes."""
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(server.pid, signal.SIGCONT)


@pytest.mark.timeout(60)
def test_sigkill_during_concurrent_saves(
    private_nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Under six writers the server freezes past the request timeout (SIGSTOP: the saves in
    flight land once it resumes, after their callers stopped waiting), then is SIGKILLed and
    restarted twice; each time it is back well within the resolution window.

    What each caller was told must match the stream exactly: a save that returned is stored
    once; a save that raised is not stored at all. Nobody is left with an unknown outcome: that
    answer is only for a server that stays away beyond the window (test_readback.py).
    """
    caplog.set_level(logging.WARNING, logger="eventstore")
    env = {
        "PERSISTENCE_MODULE": "eventstore.jetstream",
        "NATS_URL": private_nats_server.url,
        "NATS_STREAM": "KILLED",
        "NATS_TIMEOUT": "1",
    }
    window = 1.0 * _RESOLVE_WINDOW  # NATS_TIMEOUT x the resolution window
    app = Application[uuid.UUID](env=env)
    writers = 6
    ledgers = [Ledger() for _ in range(writers)]
    app.save(*ledgers)
    outcomes: list[list[tuple[str, str]]] = [[] for _ in range(writers)]  # (token, told)
    stop = threading.Event()

    def write(i: int) -> None:
        ledger = ledgers[i]
        while not stop.is_set():
            token = uuid.uuid4().hex
            ledger.add(token)
            try:
                app.save(ledger)
                outcomes[i].append((token, "ok"))
                continue
            except Exception as e:  # every answer is recorded; the test judges it
                outcomes[i].append((token, f"{type(e).__name__}: {e}"))
            ledger = _load(app, ledger.id)  # the failed save consumed the pending event

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)
        _freeze(private_nats_server, 1.5)  # writes in flight land after their callers timed out
        for _ in range(2):
            time.sleep(1.0)
            private_nats_server.kill()  # saves are in flight: their acknowledgements are lost
            down = time.monotonic()
            time.sleep(0.5)
            private_nats_server.start()
            assert time.monotonic() - down < window / 2, "server back too late to prove anything"
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)

        told = [(token, answer) for o in outcomes for token, answer in o]
        raised = [answer for _, answer in told if answer != "ok"]
        assert not [a for a in raised if a.startswith("OutcomeUnknownError")], raised
        for i, ledger in enumerate(ledgers):
            stored = _load(app, ledger.id).tokens
            assert len(stored) == len(set(stored)), "a token stored twice"
            ok = {token for token, answer in outcomes[i] if answer == "ok"}
            failed = {token: answer for token, answer in outcomes[i] if answer != "ok"}
            assert ok <= set(stored), "a save that returned was lost"
            assert not [failed[t] for t in set(stored) & set(failed)], "a save that raised landed"
            assert set(stored) == ok, "the stream differs from the saves that returned"
        ok_count = len(told) - len(raised)
        assert ok_count > writers * 5, f"too few saves to prove anything ({ok_count})"
        assert "resolving by read-back" in caplog.text, "no acknowledgement was lost"
        assert "had landed" in caplog.text, "no save landed with its acknowledgement lost"
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
        # both import and connect, then start together
        eventually_sync(lambda: len(list(tmp_path.glob("go.ready.*"))) == 2, timeout=30.0)
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
