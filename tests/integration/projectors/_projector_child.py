"""A projector process for the crash test: both projections over a JetStream stream.

``python -m tests.integration.projectors._projector_child NATS_URL STREAM GRAPH VALKEY PREFIX
[--until-head]`` prints ``<graph position> <cache position>`` every 50 ms; with ``--until-head``
it exits 0 once both reach the stream head. The test SIGKILLs it at random moments.
"""

from __future__ import annotations

import sys
import time

import valkey

from application.app import FleetApplication
from projectors.cache.projection import CacheProjection
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.projection import GraphProjection
from projectors.runner import ProjectorRunner


def main(argv: list[str]) -> int:
    nats_url, stream, graph_path, valkey_url, prefix = argv[:5]
    until_head = "--until-head" in argv
    app = FleetApplication(
        {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": nats_url, "NATS_STREAM": stream}
    )
    graph = LadybugGraph(graph_path)
    board = ValkeyDeliberationBoard(valkey.Valkey.from_url(valkey_url), key_prefix=prefix)
    # A fixed owner: the restarted process is the same instance and resumes its own claim at
    # once (another owner would stand by until the killed one's lease ran out).
    runners = [
        ProjectorRunner(app, GraphProjection(graph), owner="child", batch_size=200),
        ProjectorRunner(app, CacheProjection(board), owner="child", batch_size=200),
    ]
    for r in runners:
        r.start()
    head = app.recorder.max_notification_id() or 0
    while True:
        positions = [r.position() for r in runners]
        print(*positions, flush=True)
        if any(r.error for r in runners):
            return 1
        if until_head and min(positions) >= head:
            for r in runners:
                r.close()
            graph.close()
            app.close()
            return 0
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
