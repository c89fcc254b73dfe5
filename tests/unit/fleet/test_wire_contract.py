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
"""

SEED_STATUS = {
    "DELIBERATION_STATUS_UNKNOWN": 0,
    "DELIBERATION_STATUS_PENDING": 1,
    "DELIBERATION_STATUS_IN_PROGRESS": 2,
    "DELIBERATION_STATUS_COMPLETED": 3,
    "DELIBERATION_STATUS_FAILED": 4,
    "DELIBERATION_STATUS_TIMEOUT": 5,
}

# name: (request, response, server streaming). The seed's three first, then Fleet's additions:
# those are Fleet's own contract now, and a change to one breaks Fleet's clients the same way.
RPCS = {
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
        kinds = {f.name: f.type for f in entry.field}
        if kinds != {"key": SCALARS[key], "value": SCALARS[value]}:
            out.append(f"map types {kinds}, seed has {want.type}")
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
    """The transcription is whole: 14 messages, the six statuses, the seed's three RPCs."""
    messages = seed_messages()
    assert len(messages) == 14
    assert sum(len(f) for f in messages.values()) == 63
    assert set(SEED_STATUS.values()) == set(range(6))
    assert {"Deliberate", "GetDeliberationResult", "StreamDeliberation"} <= set(RPCS)


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
