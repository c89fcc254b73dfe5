"""A council's configuration names its role checks and their weights; bad configuration is an
error naming the field; and the choice reaches the scores a deliberation records."""

from __future__ import annotations

import pytest

from agent_runtime.api import Assessment, AssessmentInput
from aggregates import AgentId
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.councils import CouncilConfigError, parse_councils
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from tests.support.deliberations import requested
from tests.support.waiting import until_terminal
from tests.unit.dispatchers.test_protocol import ScriptedRuntime, fixed


def test_checks_and_weights_parse_from_a_mapping_or_a_list() -> None:
    councils = parse_councils(
        {
            "DEVOPS": {"checks": {"shellcheck": 1.0, "yamllint": 0.5}},
            "data": {"checks": ["sql"], "agents": [{"temperature": 0.1}]},
        }
    )
    assert councils.check_weights("devops") == {"shellcheck": 1.0, "yamllint": 0.5}
    assert councils.check_weights("DATA") == {"sql": 1.0}
    assert councils.check_weights("QA") == {}  # not named: every check at weight 1
    assert councils.by_role["DATA"][0].temperature == 0.1


@pytest.mark.parametrize(
    ("checks", "error"),
    [
        ({"pylint": 1}, "councils.DEVOPS.checks: unknown check 'pylint' for DEVOPS (its checks: "),
        ({"shellcheck": -1}, "councils.DEVOPS.checks.shellcheck: weight must be finite and >= 0"),
        ({"shellcheck": float("nan")}, "councils.DEVOPS.checks.shellcheck: weight must be finite"),
        ({"shellcheck": "high"}, "councils.DEVOPS.checks.shellcheck: weight must be a number"),
        ({"shellcheck": True}, "councils.DEVOPS.checks.shellcheck: weight must be a number"),
        ("shellcheck", "councils.DEVOPS.checks must be a mapping of check name to weight"),
    ],
)
def test_bad_check_configuration_names_the_field(checks: object, error: str) -> None:
    with pytest.raises(CouncilConfigError) as e:
        parse_councils({"DEVOPS": {"checks": checks}})
    assert str(e.value).startswith(error)


UNSAFE = "```bash\n#!/bin/bash\ncd $1\nrm -rf $2/*\n```\n"
SAFE = '```bash\n#!/bin/bash\nset -euo pipefail\ncd "$1"\nrm -rf "${2:?}"/*\n```\n'


class RecordingRuntime(ScriptedRuntime):
    def __init__(self) -> None:
        super().__init__({"devops-agent-1": fixed(UNSAFE), "devops-agent-2": fixed(SAFE)})
        self.assessed: list[AssessmentInput] = []

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        self.assessed.append(request)
        return await super().assess(request)


async def test_the_configured_checks_score_a_deliberation_and_are_recorded() -> None:
    rt = RecordingRuntime()
    a = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    store = ApplicationDeliberationStore(a)
    councils = parse_councils({"DEVOPS": {"checks": {"shellcheck": 2.0}}})
    options = DispatcherOptions(peer_review=False, councils=councils)
    d = requested("devops-clean", role="DEVOPS", num_agents=2, task="Write a cleanup script")
    a.save(d)
    async with DeliberationDispatcher(store, ApplicationEventFeed(a), rt, options=options):
        done = await until_terminal(store, d.id)
    assert rt.assessed and rt.assessed[-1].check_weights == {"shellcheck": 2.0}
    assert done.winner == "devops-agent-2"
    checks = {c.check_type: c for c in done.final_proposals()[AgentId("devops-agent-1")].checks}
    assert set(checks) == {"policy", "shellcheck"}  # the council named shellcheck only
    assert checks["shellcheck"].details["weight"] == "2" and not checks["shellcheck"].passed
