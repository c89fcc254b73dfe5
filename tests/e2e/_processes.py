"""Fleet processes for multi-process tests: `fleet up --components …` and `fleet worker` children
on one nats-server (launched by ``fleet_testing.processes``, which the soak benchmark shares).

Each child gets its own data dir and is stopped (or SIGKILLed) by the test that started it, by
process id only.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleet_testing.processes import FLEET, REPO, FleetProcess, WorkerProcess

__all__ = ["BACKENDS", "FLEET", "REPO", "FleetProcess", "WorkerProcess", "dispatcher_env"]

# Where agent calls run: warm Ray actors (on the test session's Ray instance: see the
# ``backend_env`` fixture), the same council code in the dispatcher's process, or the NATS work
# queue with workers (killed together with the dispatcher).
BACKENDS = {
    "ray": {"FLEET_AGENT_RUNTIME": "ray", "FLEET_AGENT_BACKEND": "ray"},
    "in-process": {"FLEET_AGENT_RUNTIME": "local"},
    "nats": {"FLEET_AGENT_BACKEND": "nats", "FLEET_WORKER_ACK_WAIT": "2"},
}


def dispatcher_env(
    nats_url: str, stream: str, llm_url: str, backend: Mapping[str, str], **extra: str
) -> dict[str, str]:
    """The settings of a dispatcher process against the load generator at ``llm_url``, its agent
    calls where ``backend`` (the ``backend_env`` fixture) puts them; ``extra`` adds or overrides
    settings."""
    return {
        "NATS_URL": nats_url,
        "FLEET_STREAM": stream,
        "FLEET_VLLM_URL": llm_url,
        "FLEET_VLLM_MODEL": "loadgen",
        "FLEET_WORK_LEASE": "2",
        "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off",
        **backend,
        **extra,
    }
