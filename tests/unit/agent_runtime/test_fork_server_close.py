"""A warm sandbox closed twice signals its process group once: after the first close has reaped
it, the group id may belong to another process."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from agent_runtime.checks import sandbox_warm
from agent_runtime.checks.sandbox_warm import ForkServer


def test_a_second_close_kills_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    ours, _theirs = socket.socketpair()
    groups: list[int] = []
    real_killpg = os.killpg

    def killpg(pgid: int, sig: int) -> None:
        groups.append(pgid)
        real_killpg(pgid, sig)

    monkeypatch.setattr(sandbox_warm.os, "killpg", killpg)
    server = ForkServer(proc, ours)
    server.close()
    assert proc.returncode is not None  # killed and reaped
    server.close()
    assert groups == [proc.pid]
    _theirs.close()
