from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeliberationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELIBERATION_STATUS_UNKNOWN: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_PENDING: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_IN_PROGRESS: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_COMPLETED: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_FAILED: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_TIMEOUT: _ClassVar[DeliberationStatus]
    DELIBERATION_STATUS_CANCELLED: _ClassVar[DeliberationStatus]
DELIBERATION_STATUS_UNKNOWN: DeliberationStatus
DELIBERATION_STATUS_PENDING: DeliberationStatus
DELIBERATION_STATUS_IN_PROGRESS: DeliberationStatus
DELIBERATION_STATUS_COMPLETED: DeliberationStatus
DELIBERATION_STATUS_FAILED: DeliberationStatus
DELIBERATION_STATUS_TIMEOUT: DeliberationStatus
DELIBERATION_STATUS_CANCELLED: DeliberationStatus

class TaskConstraints(_message.Message):
    __slots__ = ("rubric", "requirements", "metadata", "max_iterations", "timeout_seconds")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUBRIC_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MAX_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    rubric: str
    requirements: _containers.RepeatedScalarFieldContainer[str]
    metadata: _containers.ScalarMap[str, str]
    max_iterations: int
    timeout_seconds: int
    def __init__(self, rubric: _Optional[str] = ..., requirements: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_iterations: _Optional[int] = ..., timeout_seconds: _Optional[int] = ...) -> None: ...

class DeliberateRequest(_message.Message):
    __slots__ = ("task_id", "task_description", "role", "constraints", "rounds", "num_agents")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    NUM_AGENTS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    task_description: str
    role: str
    constraints: TaskConstraints
    rounds: int
    num_agents: int
    def __init__(self, task_id: _Optional[str] = ..., task_description: _Optional[str] = ..., role: _Optional[str] = ..., constraints: _Optional[_Union[TaskConstraints, _Mapping]] = ..., rounds: _Optional[int] = ..., num_agents: _Optional[int] = ...) -> None: ...

class DeliberateResponse(_message.Message):
    __slots__ = ("task_id", "results", "winner_id", "duration_ms", "metadata", "status")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    WINNER_ID_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    results: _containers.RepeatedCompositeFieldContainer[DeliberationResult]
    winner_id: str
    duration_ms: int
    metadata: OrchestratorMetadata
    status: DeliberationStatus
    def __init__(self, task_id: _Optional[str] = ..., results: _Optional[_Iterable[_Union[DeliberationResult, _Mapping]]] = ..., winner_id: _Optional[str] = ..., duration_ms: _Optional[int] = ..., metadata: _Optional[_Union[OrchestratorMetadata, _Mapping]] = ..., status: _Optional[_Union[DeliberationStatus, str]] = ...) -> None: ...

class GetDeliberationResultRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class GetDeliberationResultResponse(_message.Message):
    __slots__ = ("task_id", "status", "results", "winner_id", "duration_ms", "error_message", "metadata")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    WINNER_ID_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    status: DeliberationStatus
    results: _containers.RepeatedCompositeFieldContainer[DeliberationResult]
    winner_id: str
    duration_ms: int
    error_message: str
    metadata: OrchestratorMetadata
    def __init__(self, task_id: _Optional[str] = ..., status: _Optional[_Union[DeliberationStatus, str]] = ..., results: _Optional[_Iterable[_Union[DeliberationResult, _Mapping]]] = ..., winner_id: _Optional[str] = ..., duration_ms: _Optional[int] = ..., error_message: _Optional[str] = ..., metadata: _Optional[_Union[OrchestratorMetadata, _Mapping]] = ...) -> None: ...

class DeliberationResult(_message.Message):
    __slots__ = ("proposal", "checks", "score", "rank")
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    proposal: Proposal
    checks: CheckSuite
    score: float
    rank: int
    def __init__(self, proposal: _Optional[_Union[Proposal, _Mapping]] = ..., checks: _Optional[_Union[CheckSuite, _Mapping]] = ..., score: _Optional[float] = ..., rank: _Optional[int] = ...) -> None: ...

class Proposal(_message.Message):
    __slots__ = ("author_id", "author_role", "content", "created_at_ms", "revisions")
    AUTHOR_ID_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    author_id: str
    author_role: str
    content: str
    created_at_ms: int
    revisions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, author_id: _Optional[str] = ..., author_role: _Optional[str] = ..., content: _Optional[str] = ..., created_at_ms: _Optional[int] = ..., revisions: _Optional[_Iterable[str]] = ...) -> None: ...

class CheckSuite(_message.Message):
    __slots__ = ("policy", "lint", "dryrun", "additional_checks", "all_passed")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    LINT_FIELD_NUMBER: _ClassVar[int]
    DRYRUN_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_CHECKS_FIELD_NUMBER: _ClassVar[int]
    ALL_PASSED_FIELD_NUMBER: _ClassVar[int]
    policy: PolicyResult
    lint: LintResult
    dryrun: DryRunResult
    additional_checks: _containers.RepeatedCompositeFieldContainer[CheckResult]
    all_passed: bool
    def __init__(self, policy: _Optional[_Union[PolicyResult, _Mapping]] = ..., lint: _Optional[_Union[LintResult, _Mapping]] = ..., dryrun: _Optional[_Union[DryRunResult, _Mapping]] = ..., additional_checks: _Optional[_Iterable[_Union[CheckResult, _Mapping]]] = ..., all_passed: _Optional[bool] = ...) -> None: ...

class PolicyResult(_message.Message):
    __slots__ = ("passed", "violations", "message")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    violations: _containers.RepeatedScalarFieldContainer[str]
    message: str
    def __init__(self, passed: _Optional[bool] = ..., violations: _Optional[_Iterable[str]] = ..., message: _Optional[str] = ...) -> None: ...

class LintResult(_message.Message):
    __slots__ = ("passed", "error_count", "warning_count", "errors")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    ERROR_COUNT_FIELD_NUMBER: _ClassVar[int]
    WARNING_COUNT_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    error_count: int
    warning_count: int
    errors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, passed: _Optional[bool] = ..., error_count: _Optional[int] = ..., warning_count: _Optional[int] = ..., errors: _Optional[_Iterable[str]] = ...) -> None: ...

class DryRunResult(_message.Message):
    __slots__ = ("passed", "output", "exit_code", "message")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    output: str
    exit_code: int
    message: str
    def __init__(self, passed: _Optional[bool] = ..., output: _Optional[str] = ..., exit_code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class CheckResult(_message.Message):
    __slots__ = ("check_type", "passed", "score", "message", "details")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHECK_TYPE_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    check_type: str
    passed: bool
    score: float
    message: str
    details: _containers.ScalarMap[str, str]
    def __init__(self, check_type: _Optional[str] = ..., passed: _Optional[bool] = ..., score: _Optional[float] = ..., message: _Optional[str] = ..., details: _Optional[_Mapping[str, str]] = ...) -> None: ...

class OrchestratorMetadata(_message.Message):
    __slots__ = ("orchestrator_version", "timestamp_ms", "execution_id", "tags")
    class TagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ORCHESTRATOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    orchestrator_version: str
    timestamp_ms: int
    execution_id: str
    tags: _containers.ScalarMap[str, str]
    def __init__(self, orchestrator_version: _Optional[str] = ..., timestamp_ms: _Optional[int] = ..., execution_id: _Optional[str] = ..., tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DeliberationUpdate(_message.Message):
    __slots__ = ("status", "progress_percent", "current_step", "current_agent", "partial_result")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_STEP_FIELD_NUMBER: _ClassVar[int]
    CURRENT_AGENT_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_RESULT_FIELD_NUMBER: _ClassVar[int]
    status: str
    progress_percent: int
    current_step: str
    current_agent: str
    partial_result: DeliberationResult
    def __init__(self, status: _Optional[str] = ..., progress_percent: _Optional[int] = ..., current_step: _Optional[str] = ..., current_agent: _Optional[str] = ..., partial_result: _Optional[_Union[DeliberationResult, _Mapping]] = ...) -> None: ...

class GetDeliberationHistoryRequest(_message.Message):
    __slots__ = ("task_id", "to_version")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TO_VERSION_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    to_version: int
    def __init__(self, task_id: _Optional[str] = ..., to_version: _Optional[int] = ...) -> None: ...

class HistoryEvent(_message.Message):
    __slots__ = ("version", "type", "timestamp_ms", "data_json")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    version: int
    type: str
    timestamp_ms: int
    data_json: str
    def __init__(self, version: _Optional[int] = ..., type: _Optional[str] = ..., timestamp_ms: _Optional[int] = ..., data_json: _Optional[str] = ...) -> None: ...

class GetDeliberationHistoryResponse(_message.Message):
    __slots__ = ("task_id", "deliberation_id", "events", "status", "winner_id", "results")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DELIBERATION_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WINNER_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    deliberation_id: str
    events: _containers.RepeatedCompositeFieldContainer[HistoryEvent]
    status: DeliberationStatus
    winner_id: str
    results: _containers.RepeatedCompositeFieldContainer[DeliberationResult]
    def __init__(self, task_id: _Optional[str] = ..., deliberation_id: _Optional[str] = ..., events: _Optional[_Iterable[_Union[HistoryEvent, _Mapping]]] = ..., status: _Optional[_Union[DeliberationStatus, str]] = ..., winner_id: _Optional[str] = ..., results: _Optional[_Iterable[_Union[DeliberationResult, _Mapping]]] = ...) -> None: ...

class QueryHistoryRequest(_message.Message):
    __slots__ = ("cypher", "params_json", "limit")
    class ParamsJsonEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CYPHER_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    cypher: str
    params_json: _containers.ScalarMap[str, str]
    limit: int
    def __init__(self, cypher: _Optional[str] = ..., params_json: _Optional[_Mapping[str, str]] = ..., limit: _Optional[int] = ...) -> None: ...

class QueryHistoryResponse(_message.Message):
    __slots__ = ("columns", "rows_json", "truncated")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_JSON_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[str]
    rows_json: _containers.RepeatedScalarFieldContainer[str]
    truncated: bool
    def __init__(self, columns: _Optional[_Iterable[str]] = ..., rows_json: _Optional[_Iterable[str]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class DeliberationSummary(_message.Message):
    __slots__ = ("task_id", "deliberation_id", "role", "status", "plan_id", "story_id", "created_at_ms", "finished_at_ms", "winner_id", "num_agents", "rounds", "task_description")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DELIBERATION_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    STORY_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    WINNER_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_AGENTS_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    TASK_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    deliberation_id: str
    role: str
    status: DeliberationStatus
    plan_id: str
    story_id: str
    created_at_ms: int
    finished_at_ms: int
    winner_id: str
    num_agents: int
    rounds: int
    task_description: str
    def __init__(self, task_id: _Optional[str] = ..., deliberation_id: _Optional[str] = ..., role: _Optional[str] = ..., status: _Optional[_Union[DeliberationStatus, str]] = ..., plan_id: _Optional[str] = ..., story_id: _Optional[str] = ..., created_at_ms: _Optional[int] = ..., finished_at_ms: _Optional[int] = ..., winner_id: _Optional[str] = ..., num_agents: _Optional[int] = ..., rounds: _Optional[int] = ..., task_description: _Optional[str] = ...) -> None: ...

class ListDeliberationsRequest(_message.Message):
    __slots__ = ("status", "role", "plan_id", "created_after_ms", "created_before_ms", "page_size", "page_token")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    status: DeliberationStatus
    role: str
    plan_id: str
    created_after_ms: int
    created_before_ms: int
    page_size: int
    page_token: str
    def __init__(self, status: _Optional[_Union[DeliberationStatus, str]] = ..., role: _Optional[str] = ..., plan_id: _Optional[str] = ..., created_after_ms: _Optional[int] = ..., created_before_ms: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListDeliberationsResponse(_message.Message):
    __slots__ = ("deliberations", "next_page_token")
    DELIBERATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    deliberations: _containers.RepeatedCompositeFieldContainer[DeliberationSummary]
    next_page_token: str
    def __init__(self, deliberations: _Optional[_Iterable[_Union[DeliberationSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ApprovePlanRequest(_message.Message):
    __slots__ = ("plan_id", "story_id", "approved_by", "roles", "description", "tasks", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    STORY_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVED_BY_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    story_id: str
    approved_by: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    description: str
    tasks: _containers.RepeatedScalarFieldContainer[str]
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, plan_id: _Optional[str] = ..., story_id: _Optional[str] = ..., approved_by: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., tasks: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ApprovePlanResponse(_message.Message):
    __slots__ = ("plan_id", "task_ids", "created")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    def __init__(self, plan_id: _Optional[str] = ..., task_ids: _Optional[_Iterable[str]] = ..., created: _Optional[bool] = ...) -> None: ...

class CancelDeliberationRequest(_message.Message):
    __slots__ = ("task_id", "reason")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    reason: str
    def __init__(self, task_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelDeliberationResponse(_message.Message):
    __slots__ = ("task_id", "status")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    status: DeliberationStatus
    def __init__(self, task_id: _Optional[str] = ..., status: _Optional[_Union[DeliberationStatus, str]] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProjectionStatus(_message.Message):
    __slots__ = ("name", "position", "lag_events", "lag_seconds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    LAG_EVENTS_FIELD_NUMBER: _ClassVar[int]
    LAG_SECONDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    position: int
    lag_events: int
    lag_seconds: float
    def __init__(self, name: _Optional[str] = ..., position: _Optional[int] = ..., lag_events: _Optional[int] = ..., lag_seconds: _Optional[float] = ...) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("version", "stream_head", "projections", "deliberations_in_flight", "endpoints")
    class EndpointsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STREAM_HEAD_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    DELIBERATIONS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    version: str
    stream_head: int
    projections: _containers.RepeatedCompositeFieldContainer[ProjectionStatus]
    deliberations_in_flight: int
    endpoints: _containers.ScalarMap[str, str]
    def __init__(self, version: _Optional[str] = ..., stream_head: _Optional[int] = ..., projections: _Optional[_Iterable[_Union[ProjectionStatus, _Mapping]]] = ..., deliberations_in_flight: _Optional[int] = ..., endpoints: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RebuildProjectionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RebuildProjectionResponse(_message.Message):
    __slots__ = ("name", "target")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: int
    def __init__(self, name: _Optional[str] = ..., target: _Optional[int] = ...) -> None: ...

class VerifyProjectionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProjectionDifference(_message.Message):
    __slots__ = ("projection", "deliberation_id", "task_id", "detail")
    PROJECTION_FIELD_NUMBER: _ClassVar[int]
    DELIBERATION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    projection: str
    deliberation_id: str
    task_id: str
    detail: str
    def __init__(self, projection: _Optional[str] = ..., deliberation_id: _Optional[str] = ..., task_id: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class VerifyProjectionsResponse(_message.Message):
    __slots__ = ("stream_head", "deliberations", "differences", "cache_misses", "positions")
    class PositionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    STREAM_HEAD_FIELD_NUMBER: _ClassVar[int]
    DELIBERATIONS_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCES_FIELD_NUMBER: _ClassVar[int]
    CACHE_MISSES_FIELD_NUMBER: _ClassVar[int]
    POSITIONS_FIELD_NUMBER: _ClassVar[int]
    stream_head: int
    deliberations: int
    differences: _containers.RepeatedCompositeFieldContainer[ProjectionDifference]
    cache_misses: int
    positions: _containers.ScalarMap[str, int]
    def __init__(self, stream_head: _Optional[int] = ..., deliberations: _Optional[int] = ..., differences: _Optional[_Iterable[_Union[ProjectionDifference, _Mapping]]] = ..., cache_misses: _Optional[int] = ..., positions: _Optional[_Mapping[str, int]] = ...) -> None: ...
