"""What the kernel says of a process, for tests that kill one and wait for it to be gone."""

from __future__ import annotations

from pathlib import Path

__all__ = ["children", "gone"]


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie that only waits for its parent to reap it.

    (``kill`` of a pid that is a zombie succeeds, so "can I signal it" is not the test.)"""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def children(pid: int) -> list[int]:
    """The processes ``pid`` started that still run (its direct children, from /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += map(int, (task / "children").read_text().split())
        except OSError:
            continue
    return found
