"""The private Neo4j's time to ready with its class archive, beside the same start without it.

Run: ``.venv/bin/python bench/neo4j_start_bench.py [--pairs 3] [--quick]``

Each pair starts a fresh server twice, alternated: once as ``fleet up`` starts it (mapping the
class archive ``make neo4j`` recorded, ``fleet.embedded.neo4j_archive``), once told to map an
archive that does not exist, which the JVM ignores as it would a stale one: the start without it.
Time to ready is from the spawn to the launcher's ready line (Bolt accepts the password). Each
server is stopped and its data removed before the next. ``--quick`` uses the tests' quick-start
JVM options (``QUICK_START_JVM``) instead of the distribution's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet.embedded.neo4j import QUICK_START_JVM, Neo4jServer, generate_password, neo4j_jars

WITHOUT = ("-XX:SharedArchiveFile=/nonexistent/neo4j.jsa",)
"""Names an archive, so none is added, and one the JVM cannot map, so it loads every class."""


def time_to_ready(options: tuple[str, ...]) -> float:
    with tempfile.TemporaryDirectory(prefix="fleet-neo4j-bench-") as data:
        server = Neo4jServer(Path(data), password=generate_password(), jvm_options=options)
        started = time.perf_counter()
        try:
            server.start()
            return time.perf_counter() - started
        finally:
            server.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="starts with and without, alternated")
    p.add_argument("--quick", action="store_true", help="the tests' quick-start JVM options")
    args = p.parse_args()
    jars = neo4j_jars()
    if not jars.class_archive.is_file():
        print(f"no class archive in {jars.classes}: run `make neo4j` first", file=sys.stderr)
        return 1
    base = QUICK_START_JVM if args.quick else ()
    print(f"archive: {jars.class_archive} ({jars.class_archive.stat().st_size / 2**20:.0f} MiB)")
    print(f"JVM options: {'quick-start' if args.quick else 'the distribution'}'s")
    with_archive: list[float] = []
    without: list[float] = []
    for pair in range(1, args.pairs + 1):
        with_archive.append(time_to_ready(base))
        without.append(time_to_ready(base + WITHOUT))
        print(f"pair {pair}: with the archive {with_archive[-1]:5.1f} s, "
              f"without {without[-1]:5.1f} s", flush=True)  # fmt: skip
    mw, mo = statistics.median(with_archive), statistics.median(without)
    print(f"median: with {mw:.1f} s, without {mo:.1f} s (ceiling): {mw / mo:.2f}x the time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
