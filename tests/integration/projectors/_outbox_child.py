"""An outbox process for the crash test: the outbox projection over a JetStream stream.

``python -m tests.integration.projectors._outbox_child NATS_URL STREAM [BATCH [OWNER]]`` prints
the outbox's position every 20 ms and runs until killed. The tests SIGKILL it at random moments,
or run two (two owners) and kill the one that holds the lease.
"""

from __future__ import annotations

import sys
import time

from application.app import FleetApplication
from eventstore._loop_thread import LoopThread
from projectors.outbox import AppHistory, OutboxProjection
from projectors.outbox.jetstream import JetStreamOutboxStream, OutboxUnavailableError
from projectors.runner import ProjectorRunner


def main(argv: list[str]) -> int:
    nats_url, stream = argv[:2]
    app = FleetApplication(
        {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": nats_url, "NATS_STREAM": stream}
    )
    bridge = LoopThread(name="outbox-loop")
    outbox = JetStreamOutboxStream.open(nats_url, bridge, source=stream)
    # A fixed owner: the restarted process is the same instance and resumes its own claim at
    # once (another owner would stand by until the killed one's lease ran out).
    runner = ProjectorRunner(
        app,
        OutboxProjection(outbox, AppHistory(app)),
        owner=argv[3] if len(argv) > 3 else "child",
        batch_size=int(argv[2]) if len(argv) > 2 else 50,
        retry_on=(OutboxUnavailableError,),
    )
    runner.start()
    while True:
        print(runner.position(), flush=True)
        if runner.error is not None:
            return 1
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
