"""Fixtures of the multi-process tests."""

from __future__ import annotations

import pytest

from tests.e2e._processes import BACKENDS


@pytest.fixture
def backend_env(request: pytest.FixtureRequest, backend: str) -> dict[str, str]:
    """The settings that put a child's agent calls on ``backend`` (a test's parameter). On Ray
    the children join the test session's instance at RAY_ADDRESS, as nodes join a cluster."""
    env = dict(BACKENDS[backend])
    if backend == "ray":
        env["RAY_ADDRESS"] = request.getfixturevalue("ray_address")
    return env
