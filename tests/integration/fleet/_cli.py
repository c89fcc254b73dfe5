"""Run the ``fleet`` command as a user does: a child process, its exit code, stdout and stderr."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys


async def fleet(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m fleet.cli ARGS`` with the test's environment plus ``env``."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "fleet.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
