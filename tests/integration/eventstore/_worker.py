"""A writer process for the two-process concurrency test (run with ``python -m``).

Usage: ``python -m tests.integration.eventstore._worker URL STREAM AGGREGATE_ID N START_FILE``.
Touches ``START_FILE.ready.<pid>`` once connected and waits for START_FILE, then makes N
increments of one Ledger aggregate, each a fresh load-modify-save, retrying on IntegrityError,
and prints one JSON line: the versions it won and how many conflicts it saw.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

from eventsourcing.application import Application
from eventsourcing.persistence import IntegrityError

from tests.support.aggregates import Ledger


def main(url: str, stream: str, aggregate_id: str, n: int, start_file: str) -> None:
    env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": url, "NATS_STREAM": stream}
    app = Application[uuid.UUID](env=env)
    won: list[int] = []
    conflicts = 0
    Path(f"{start_file}.ready.{os.getpid()}").touch()  # imported and connected
    deadline = time.monotonic() + 30
    while not Path(start_file).exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        while len(won) < n:
            ledger: Ledger = app.repository.get(uuid.UUID(aggregate_id))
            ledger.add(uuid.uuid4().hex)
            try:
                app.save(ledger)
            except IntegrityError:
                conflicts += 1
                continue
            won.append(ledger.version)
    finally:
        app.close()
    print(json.dumps({"won": won, "conflicts": conflicts}))


if __name__ == "__main__":
    # Through the package, as the test process imports it.
    from tests.integration.eventstore._worker import main as package_main

    package_main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
