"""Where a benchmark's CPU went: each process's own time by kind, children only where named."""

from __future__ import annotations

import os

from bench import cpu_use

KINDS: tuple[cpu_use.Kind, ...] = (
    ("sandboxes", lambda _, cmd: "forkserver" in cmd),
    ("agent actors", lambda _, cmd: cmd.startswith("ray::AgentActor")),
)


def test_each_kind_gets_its_own_time_and_children_only_where_named() -> None:
    before = {
        10: (1.0, 0.0, "ray::AgentActor"),
        11: (0.5, 2.0, "python3 -I -S /work/.fleet-forkserver.py 47"),
        12: (3.0, 0.0, "tail -f log"),
    }
    after = {
        # The actor reaped a retired sandbox's whole life (9 s): not the actor's CPU.
        10: (1.4, 9.0, "ray::AgentActor.run_batch"),
        11: (0.6, 2.5, "python3 -I -S /work/.fleet-forkserver.py 47"),
        12: (3.2, 0.0, "tail -f log"),
        13: (0.3, 0.0, "python3 -I -S /work/.fleet-forkserver.py 48"),  # started meanwhile
    }
    spent = cpu_use.spent_by_kind(before, after, KINDS, frozenset({"sandboxes"}))
    assert list(spent) == ["sandboxes", "agent actors", "other"]  # largest first
    assert round(spent["sandboxes"], 6) == 0.9  # own and runs 0.1 + 0.5, the new one 0.3
    assert round(spent["agent actors"], 6) == 0.4  # by pid, though its command line changed
    assert round(spent["other"], 6) == 0.2


def test_a_snapshot_sees_this_process_and_the_machine_is_busy() -> None:
    start = cpu_use.machine_busy_s()
    sum(i * i for i in range(200_000))
    me = cpu_use.snapshot()[os.getpid()]
    assert me[0] > 0 and "python" in me[2]
    assert cpu_use.machine_busy_s() > start
