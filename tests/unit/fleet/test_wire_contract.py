"""The seed system's clients keep working: every message, field number, type and label, enum value
and RPC shape of the seed's contract is still in the generated descriptors.

``SEED`` transcribes ``shared/notes/seed-contract.md`` in its own notation (``name type=number``;
``repeated T``, ``map<K,V>``). Where the note leaves a field's type out it is the seed's: string,
and bool for ``passed`` / ``all_passed``. Fleet may add fields, values and RPCs; it may never
renumber, retype or relabel one of these, because a client compiled against the seed's .proto
decodes by number and wire type, silently, into the wrong field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from google.protobuf import descriptor_pb2

from fleet.orchestrator.v1 import orchestrator_pb2 as pb

PACKAGE = "fleet.orchestrator.v1"

SEED = """
DeliberateRequest: task_id string=1, task_description string=2, role string=3,
  constraints TaskConstraints=4, rounds int32=5, num_agents int32=6
DeliberateResponse: task_id string=1, results repeated DeliberationResult=2, winner_id string=3,
  duration_ms int64=4, metadata OrchestratorMetadata=5
GetDeliberationResultRequest: task_id string=1
GetDeliberationResultResponse: task_id string=1, status DeliberationStatus=2,
  results repeated DeliberationResult=3, winner_id string=4, duration_ms int64=5,
  error_message string=6, metadata OrchestratorMetadata=7
TaskConstraints: rubric string=1, requirements repeated string=2, metadata map<string,string>=3,
  max_iterations int32=4, timeout_seconds int32=5
DeliberationResult: proposal Proposal=1, checks CheckSuite=2, score double=3, rank int32=4
Proposal: author_id string=1, author_role string=2, content string=3, created_at_ms int64=4,
  revisions repeated string=5
CheckSuite: policy PolicyResult=1, lint LintResult=2, dryrun DryRunResult=3,
  additional_checks repeated CheckResult=4, all_passed bool=5
PolicyResult: passed bool=1, violations repeated string=2, message string=3
LintResult: passed bool=1, error_count int32=2, warning_count int32=3, errors repeated string=4
DryRunResult: passed bool=1, output string=2, exit_code int32=3, message string=4
CheckResult: check_type string=1, passed bool=2, score double=3, message string=4,
  details map<string,string>=5
OrchestratorMetadata: orchestrator_version string=1, timestamp_ms int64=2, execution_id string=3,
  tags map<string,string>=4
DeliberationUpdate: status string=1, progress_percent int32=2, current_step string=3,
  current_agent string=4, partial_result DeliberationResult=5
OrchestrateRequest: task_id string=1, task_description string=2, role string=3,
  constraints TaskConstraints=4, options OrchestratorOptions=5, case_id string=6,
  story_id string=7, plan_id string=8, context_options ContextOptions=9
OrchestrateResponse: winner DeliberationResult=1, candidates repeated DeliberationResult=2,
  execution_id string=3, duration_ms int64=4, metadata OrchestratorMetadata=5
OrchestratorOptions: enable_peer_review bool=1, deliberation_rounds int32=2,
  enable_architect_selection bool=3, custom_params map<string,string>=4
ContextOptions: include_timeline bool=1, include_decisions bool=2, include_summaries bool=3,
  max_events int32=4, scopes repeated string=5
OrchestratorStats: total_deliberations int64=1, total_orchestrations int64=2,
  avg_deliberation_time_ms double=3, active_councils int32=4, role_counts map<string,int64>=5
GetStatusRequest: include_stats bool=1
GetStatusResponse: status string=1, uptime_seconds int64=2, stats OrchestratorStats=3
RegisterAgentRequest: agent_id string=1, role string=2, capabilities AgentCapabilities=3,
  endpoint string=4, metadata map<string,string>=5
RegisterAgentResponse: success bool=1, message string=2, council_id string=3
AgentCapabilities: supported_tasks repeated string=1, model_profile string=2,
  max_concurrent_tasks int32=3, languages repeated string=4
UnregisterAgentRequest: agent_id string=1, role string=2
UnregisterAgentResponse: success bool=1, message string=2
CreateCouncilRequest: role string=1, num_agents int32=2, config CouncilConfig=3
CreateCouncilResponse: council_id string=1, agents_created int32=2, agent_ids repeated string=3
CouncilConfig: deliberation_rounds int32=1, enable_peer_review bool=2, model_profile string=3,
  custom_params map<string,string>=4, agent_type string=5
ListCouncilsRequest: role_filter string=1, include_agents bool=2
ListCouncilsResponse: councils repeated CouncilInfo=1
CouncilInfo: council_id string=1, role string=2, num_agents int32=3, agents repeated AgentInfo=4,
  status string=5, model string=6
AgentInfo: agent_id string=1, role string=2, status string=3, capabilities AgentCapabilities=4
DeleteCouncilRequest: role string=1
DeleteCouncilResponse: success bool=1, message string=2, agents_removed int32=3
PlanningEventRequest: event_type string=1, case_id string=2, plan_id string=3,
  from_state string=4, to_state string=5, timestamp_ms int64=6, metadata map<string,string>=7
PlanningEventResponse: processed bool=1, message string=2, derived_task_ids repeated string=3
DeriveSubtasksRequest: case_id string=1, plan_id string=2, roles repeated string=3,
  strategy DerivationStrategy=4
DerivationStrategy: parallel_execution bool=1, dependency_order repeated string=2,
  max_tasks_per_role int32=3, auto_publish_to_nats bool=4
DeriveSubtasksResponse: tasks repeated AtomicTask=1, derivation_id string=2, total_tasks int32=3
AtomicTask: task_id string=1, role string=2, description string=3, dependencies repeated string=4,
  constraints TaskConstraints=5, case_id string=6, plan_id string=7, priority int32=8
GetTaskContextRequest: task_id string=1, case_id string=2, story_id string=3, role string=4,
  phase string=5, options ContextOptions=6
GetTaskContextResponse: context_text string=1, blocks ContextBlocks=2, token_count int32=3,
  version_hash string=4
ContextBlocks: system string=1, context string=2, tools string=3, history string=4
GetMetricsRequest: metric_type string=1, time_range_ms int64=2
GetMetricsResponse: performance PerformanceMetrics=1, agents AgentMetrics=2,
  councils CouncilMetrics=3
PerformanceMetrics: avg_deliberation_ms double=1, avg_orchestration_ms double=2,
  p50_latency_ms double=3, p95_latency_ms double=4, p99_latency_ms double=5
AgentMetrics: total_agents int32=1, active_agents int32=2, agents_per_role map<string,int32>=3,
  avg_agent_response_time_ms double=4
CouncilMetrics: total_councils int32=1, active_councils int32=2,
  health_per_council map<string,CouncilHealth>=3
CouncilHealth: status string=1, available_agents int32=2, busy_agents int32=3,
  success_rate double=4
"""

SEED_STATUS = {
    "DELIBERATION_STATUS_UNKNOWN": 0,
    "DELIBERATION_STATUS_PENDING": 1,
    "DELIBERATION_STATUS_IN_PROGRESS": 2,
    "DELIBERATION_STATUS_COMPLETED": 3,
    "DELIBERATION_STATUS_FAILED": 4,
    "DELIBERATION_STATUS_TIMEOUT": 5,
}

# name: (request, response, server streaming). The seed's RPCs first, then Fleet's additions:
# those are Fleet's own contract now, and a change to one breaks Fleet's clients the same way.
RPCS = {
    "Orchestrate": ("OrchestrateRequest", "OrchestrateResponse", False),
    "DeliberateForBacklogReview": ("DeliberateRequest", "DeliberateResponse", False),
    "RegisterAgent": ("RegisterAgentRequest", "RegisterAgentResponse", False),
    "UnregisterAgent": ("UnregisterAgentRequest", "UnregisterAgentResponse", False),
    "CreateCouncil": ("CreateCouncilRequest", "CreateCouncilResponse", False),
    "ListCouncils": ("ListCouncilsRequest", "ListCouncilsResponse", False),
    "DeleteCouncil": ("DeleteCouncilRequest", "DeleteCouncilResponse", False),
    "ProcessPlanningEvent": ("PlanningEventRequest", "PlanningEventResponse", False),
    "DeriveSubtasks": ("DeriveSubtasksRequest", "DeriveSubtasksResponse", False),
    "GetTaskContext": ("GetTaskContextRequest", "GetTaskContextResponse", False),
    "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse", False),
    "Deliberate": ("DeliberateRequest", "DeliberateResponse", False),
    "GetDeliberationResult": (
        "GetDeliberationResultRequest",
        "GetDeliberationResultResponse",
        False,
    ),
    "StreamDeliberation": ("DeliberateRequest", "DeliberationUpdate", True),
    "GetDeliberationHistory": (
        "GetDeliberationHistoryRequest",
        "GetDeliberationHistoryResponse",
        False,
    ),
    "QueryHistory": ("QueryHistoryRequest", "QueryHistoryResponse", False),
    "ListDeliberations": ("ListDeliberationsRequest", "ListDeliberationsResponse", False),
    "ApprovePlan": ("ApprovePlanRequest", "ApprovePlanResponse", False),
    "CancelDeliberation": ("CancelDeliberationRequest", "CancelDeliberationResponse", False),
    "GetStatus": ("GetStatusRequest", "GetStatusResponse", False),
    "GetNodeStatus": ("GetNodeStatusRequest", "GetNodeStatusResponse", False),
    "RebuildProjection": ("RebuildProjectionRequest", "RebuildProjectionResponse", False),
    "VerifyProjections": ("VerifyProjectionsRequest", "VerifyProjectionsResponse", False),
}

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "string": F.TYPE_STRING,
    "int32": F.TYPE_INT32,
    "int64": F.TYPE_INT64,
    "double": F.TYPE_DOUBLE,
    "bool": F.TYPE_BOOL,
}
_FIELD = re.compile(r"^(?P<name>\w+) (?P<repeated>repeated )?(?P<type>[\w<>,]+)=(?P<number>\d+)$")


@dataclass(frozen=True)
class Field:
    name: str
    number: int
    type: str
    """A scalar name, a message or enum name, or ``map<K,V>``."""
    repeated: bool


def seed_messages() -> dict[str, list[Field]]:
    """``SEED`` parsed: message name → its fields."""
    out: dict[str, list[Field]] = {}
    for entry in re.split(r"\n(?=\w)", SEED.strip()):
        name, _, body = entry.partition(":")
        fields = []
        for raw in (" ".join(body.split())).split(", "):
            m = _FIELD.match(raw.strip())
            assert m, f"cannot read {raw!r} in SEED"
            fields.append(Field(m["name"], int(m["number"]), m["type"], bool(m["repeated"])))
        out[name] = fields
    return out


def contract_breaks(file: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """Every way ``file`` departs from the seed's contract (empty: wire-compatible)."""
    assert file.package == PACKAGE
    messages = {m.name: m for m in file.message_type}
    problems: list[str] = []
    for msg_name, fields in seed_messages().items():
        msg = messages.get(msg_name)
        if msg is None:
            problems.append(f"{msg_name}: missing")
            continue
        by_name = {f.name: f for f in msg.field}
        for want in fields:
            have = by_name.get(want.name)
            if have is None:
                problems.append(f"{msg_name}.{want.name}: missing")
                continue
            problems += [f"{msg_name}.{want.name}: {p}" for p in _field_breaks(msg, have, want)]
    problems += _enum_breaks(file)
    problems += _service_breaks(file)
    return problems


def _field_breaks(
    msg: descriptor_pb2.DescriptorProto, have: descriptor_pb2.FieldDescriptorProto, want: Field
) -> list[str]:
    out = []
    if have.number != want.number:
        out.append(f"number {have.number}, seed has {want.number}")
    if want.type.startswith("map<"):
        key, value = want.type[4:-1].split(",")
        entry = next(
            (n for n in msg.nested_type if f".{msg.name}.{n.name}" in have.type_name), None
        )
        if have.label != F.LABEL_REPEATED or entry is None or not entry.options.map_entry:
            return [*out, f"not a {want.type}"]
        fields = {f.name: f for f in entry.field}
        value_ok = (
            fields["value"].type == SCALARS[value]
            if value in SCALARS
            else fields["value"].type_name == f".{PACKAGE}.{value}"
        )
        if fields["key"].type != SCALARS[key] or not value_ok:
            out.append(f"map types differ, seed has {want.type}")
        return out
    repeated = have.label == F.LABEL_REPEATED
    if repeated != want.repeated:
        out.append("repeated" if repeated else "not repeated")
    if want.type in SCALARS:
        if have.type != SCALARS[want.type]:
            out.append(f"type {F.Type.Name(have.type)}, seed has {want.type}")
    elif have.type_name != f".{PACKAGE}.{want.type}":
        out.append(f"type {have.type_name or F.Type.Name(have.type)}, seed has {want.type}")
    return out


def _enum_breaks(file: descriptor_pb2.FileDescriptorProto) -> list[str]:
    enum = next((e for e in file.enum_type if e.name == "DeliberationStatus"), None)
    if enum is None:
        return ["DeliberationStatus: missing"]
    values = {v.name: v.number for v in enum.value}
    return [
        f"DeliberationStatus.{name}: {values.get(name)}, seed has {number}"
        for name, number in SEED_STATUS.items()
        if values.get(name) != number
    ]


def _service_breaks(file: descriptor_pb2.FileDescriptorProto) -> list[str]:
    service = next((s for s in file.service if s.name == "OrchestratorService"), None)
    if service is None:
        return ["OrchestratorService: missing"]
    methods = {m.name: m for m in service.method}
    out = []
    for name, (request, response, streams) in RPCS.items():
        m = methods.get(name)
        if m is None:
            out.append(f"rpc {name}: missing")
            continue
        shape = (m.input_type, m.output_type, m.client_streaming, m.server_streaming)
        want = (f".{PACKAGE}.{request}", f".{PACKAGE}.{response}", False, streams)
        if shape != want:
            out.append(f"rpc {name}: {shape}, expected {want}")
    return out


def generated() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(file)
    return file


def test_the_generated_descriptors_hold_the_seed_contract() -> None:
    assert contract_breaks(generated()) == []


def test_every_seed_message_and_rpc_is_checked() -> None:
    """The transcription is whole: the seed's 50 messages, six statuses and fourteen RPCs."""
    messages = seed_messages()
    assert len(messages) == 50
    assert set(SEED_STATUS.values()) == set(range(6))
    seed_rpcs = {"Deliberate", "GetDeliberationResult", "StreamDeliberation", "Orchestrate"}
    seed_rpcs |= {"DeliberateForBacklogReview", "RegisterAgent", "UnregisterAgent"}
    seed_rpcs |= {"CreateCouncil", "ListCouncils", "DeleteCouncil", "ProcessPlanningEvent"}
    seed_rpcs |= {"DeriveSubtasks", "GetTaskContext", "GetStatus", "GetMetrics"}
    assert seed_rpcs <= set(RPCS)


def _message(file: descriptor_pb2.FileDescriptorProto, name: str) -> descriptor_pb2.DescriptorProto:
    return next(m for m in file.message_type if m.name == name)


def _field(msg: descriptor_pb2.DescriptorProto, name: str) -> descriptor_pb2.FieldDescriptorProto:
    return next(f for f in msg.field if f.name == name)


def _renumber(file: descriptor_pb2.FileDescriptorProto) -> None:
    _field(_message(file, "DeliberateRequest"), "num_agents").number = 7


def _retype(file: descriptor_pb2.FileDescriptorProto) -> None:
    _field(_message(file, "GetDeliberationResultResponse"), "duration_ms").type = F.TYPE_INT32


def _unrepeat(file: descriptor_pb2.FileDescriptorProto) -> None:
    _field(_message(file, "Proposal"), "revisions").label = F.LABEL_OPTIONAL


def _unmap(file: descriptor_pb2.FileDescriptorProto) -> None:
    tags = _field(_message(file, "OrchestratorMetadata"), "tags")
    tags.type, tags.type_name, tags.label = F.TYPE_STRING, "", F.LABEL_OPTIONAL


def _rename(file: descriptor_pb2.FileDescriptorProto) -> None:
    _field(_message(file, "CheckResult"), "check_type").name = "kind"


def _reorder_enum(file: descriptor_pb2.FileDescriptorProto) -> None:
    enum = next(e for e in file.enum_type if e.name == "DeliberationStatus")
    next(v for v in enum.value if v.name.endswith("_TIMEOUT")).number = 7


def _unstream(file: descriptor_pb2.FileDescriptorProto) -> None:
    service = file.service[0]
    next(m for m in service.method if m.name == "StreamDeliberation").server_streaming = False


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        (_renumber, "DeliberateRequest.num_agents: number 7, seed has 6"),
        (_retype, "GetDeliberationResultResponse.duration_ms: type TYPE_INT32, seed has int64"),
        (_unrepeat, "Proposal.revisions: not repeated"),
        (_unmap, "OrchestratorMetadata.tags: not a map<string,string>"),
        (_rename, "CheckResult.check_type: missing"),
        (_reorder_enum, "DeliberationStatus.DELIBERATION_STATUS_TIMEOUT: 7, seed has 5"),
        (_unstream, "rpc StreamDeliberation:"),
    ],
)
def test_a_break_of_the_contract_is_caught(change: object, reported: str) -> None:
    """The check itself is sharp: each kind of break in a copy of the descriptors is named."""
    file = generated()
    change(file)  # type: ignore[operator]
    problems = contract_breaks(file)
    assert any(p.startswith(reported) for p in problems), problems
