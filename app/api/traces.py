"""Traces: OTLP/HTTP ingestion, reading traces, and a test case from a trace."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, Router, get, post, put
from litestar.di import Provide
from litestar.params import FromPath, JSONBody, QueryParameter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agentlasso.api.test_cases import case_out
from agentlasso.api.trace_rules import evaluation_out
from agentlasso.api.trace_shapes import (
    CaseSuggestions,
    TestCaseFromTrace,
    TestCaseFromTraceOut,
    Trace,
    TraceConversation,
    TracePage,
    conversation_out,
    span_out,
    trace_out,
)
from agentlasso.db.trace_lists import TraceFilters
from agentlasso.domain.stored_text import WITHOUT_NUL_PATTERN
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.http.auth import (
    CallerDep,
    PlatformDep,
    ProjectId,
    provide_project_id,
    require_api_key,
)
from agentlasso.http.pagination import DEFAULT_LIMIT, Limit, body_id
from agentlasso.schemas.traces import TraceSettings, TraceSettingsUpdate
from agentlasso.services import trace_conversations as conversations
from agentlasso.services import traces as service
from agentlasso.services.platform import Platform
from agentlasso.traces.otlp import Intake

PROTOBUF = "application/x-protobuf"
TraceCursor = Annotated[
    str | None,
    QueryParameter(
        pattern=service.TRACE_CURSOR_PATTERN,
        description="The next_cursor of the previous page; absent for the first page.",
    ),
]
# No U+0000 (PostgreSQL text cannot hold it): a 422 naming the parameter, not a failed query.
SearchText = Annotated[
    str | None,
    QueryParameter(
        max_length=500, pattern=WITHOUT_NUL_PATTERN, description="Text in the input or the reply."
    ),
]
ToolFilter = Annotated[
    str | None,
    QueryParameter(
        max_length=256,
        pattern=WITHOUT_NUL_PATTERN,
        description="Only traces that called this tool.",
    ),
]


def otlp_answer(intake: Intake, content_type: str | None) -> Response[bytes]:
    """OTLP's answer: empty on full success, a partial success naming the refused spans."""
    if (content_type or "").lower().startswith(PROTOBUF):
        answer = ExportTraceServiceResponse()
        if intake.rejections:
            answer.partial_success.rejected_spans = len(intake.rejections)
            answer.partial_success.error_message = intake.rejection_message()
        return Response(answer.SerializeToString(), media_type=PROTOBUF)
    body: dict[str, Any] = {}
    if intake.rejections:
        body["partialSuccess"] = {
            "rejectedSpans": str(len(intake.rejections)),
            "errorMessage": intake.rejection_message(),
        }
    return Response(msgspec.json.encode(body), media_type="application/json")


async def _export(
    request: Request[Any, Any, Any], platform: Platform, project_id: UUID
) -> Response[bytes]:
    body = await request.body()
    content_type = request.headers.get("content-type")
    intake = await service.accept_otlp(
        platform, project_id, body, content_type, request.headers.get("content-encoding")
    )
    return otlp_answer(intake, content_type)


@post("/v1/traces", operation_id="exportTraces", tags=("traces",), status_code=200)
async def export_traces(
    request: Request[Any, Any, Any], platform: PlatformDep, project_id: ProjectId
) -> Response[bytes]:
    """OTLP/HTTP at the path an exporter given the platform's base URL posts to: an
    ExportTraceServiceRequest in protobuf or JSON, gzip or not. Spans are read within a second
    or so; refused spans are named in OTLP's partial success."""
    return await _export(request, platform, project_id)


@post("/api/v1/traces/otlp", operation_id="exportTracesUnderApi", tags=("traces",), status_code=200)
async def export_traces_under_api(
    request: Request[Any, Any, Any], platform: PlatformDep, project_id: ProjectId
) -> Response[bytes]:
    """The same OTLP/HTTP endpoint as /v1/traces, under the API's own prefix."""
    return await _export(request, platform, project_id)


def otlp_router() -> Router:
    """The OTLP endpoints: the project key as Bearer or x-api-key, the body read as it came."""
    return Router(
        path="/",
        route_handlers=[export_traces, export_traces_under_api],
        guards=[require_api_key],
        dependencies={"project_id": Provide(provide_project_id, sync_to_thread=False)},
    )


class TraceController(Controller):
    """The project's traces."""

    path = "/traces"
    tags = ("traces",)

    @get(operation_id="listTraces")
    async def list_traces(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        limit: Limit = DEFAULT_LIMIT,
        cursor: TraceCursor = None,
        q: SearchText = None,
        tool: ToolFilter = None,
        errors_only: Annotated[
            bool, QueryParameter(description="Only traces that recorded an error.")
        ] = False,
        started_after: Annotated[
            str | None, QueryParameter(description="Only traces that started at or after.")
        ] = None,
        started_before: Annotated[
            str | None, QueryParameter(description="Only traces that started before.")
        ] = None,
    ) -> TracePage:
        """The project's traces, newest first, optionally searched and filtered."""
        filters = TraceFilters(
            text=q or None,
            tool=tool or None,
            errors_only=errors_only,
            started_after=_instant(started_after, "started_after"),
            started_before=_instant(started_before, "started_before"),
        )
        rows, next_cursor = await service.list_traces(platform, project_id, filters, cursor, limit)
        return TracePage(items=[trace_out(row) for row in rows], next_cursor=next_cursor)

    @get("/conversations/{conversation_id:str}", operation_id="getTraceConversation")
    async def get_conversation(
        self, platform: PlatformDep, project_id: ProjectId, conversation_id: FromPath[str]
    ) -> TraceConversation:
        """The traces sharing this conversation id (gen_ai.conversation.id or session.id),
        earliest first: a trace per turn."""
        view = await conversations.get_conversation(platform, project_id, conversation_id)
        return conversation_out(view)

    @post(
        "/conversations/{conversation_id:str}/test-case",
        operation_id="createTestCaseFromConversation",
        status_code=201,
    )
    async def create_conversation_case(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        conversation_id: FromPath[str],
        data: JSONBody[TestCaseFromTrace],
    ) -> TestCaseFromTraceOut:
        """A conversation case scripting each trace's input as a user turn, each turn with
        the tool checks its calls offer unless `checks` is given, linked to the first trace."""
        dataset_id = body_id(data.dataset_id, "/dataset_id", "dataset")
        view = await conversations.get_conversation(platform, project_id, conversation_id)
        case, warnings = await conversations.make_case_from_conversation(
            platform, project_id, view, dataset_id,
            checks=None if data.checks is None else tuple(data.checks),
            expected_output=data.expected_output,
        )  # fmt: skip
        return TestCaseFromTraceOut(
            **msgspec.structs.asdict(case_out(case, warnings)),
            suggestions=CaseSuggestions(expected_output=view.traces[-1].output),
        )

    @get("/{trace_id:str}", operation_id="getTrace")
    async def get_trace(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        trace_id: FromPath[str],
    ) -> Trace:
        """One trace: its summary, its spans in start order, and the cases made from it."""
        view = await service.get_trace(platform, project_id, trace_id)
        answer = trace_out(view.trace)
        answer.spans = [span_out(span) for span in view.spans]
        answer.test_case_ids = [str(case_id) for case_id, _, _ in view.cases]
        answer.evaluations = [evaluation_out(evaluation) for evaluation in view.evaluations]
        return answer

    @post("/{trace_id:str}/test-case", operation_id="createTestCaseFromTrace", status_code=201)
    async def create_test_case(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        trace_id: FromPath[str],
        data: JSONBody[TestCaseFromTrace],
    ) -> TestCaseFromTraceOut:
        """A test case with the trace's input, in the dataset, linked to the trace."""
        dataset_id = body_id(data.dataset_id, "/dataset_id", "dataset")
        trace = await service.get_trace_summary(platform, project_id, trace_id)
        case, warnings, suggestions = await service.make_case_from_trace(
            platform,
            project_id,
            trace,
            dataset_id,
            checks=None if data.checks is None else tuple(data.checks),
            expected_output=data.expected_output,
        )
        shown = case_out(case, warnings)
        return TestCaseFromTraceOut(
            **msgspec.structs.asdict(shown),
            suggestions=CaseSuggestions(expected_output=suggestions.expected_output),
        )


def _instant(raw: str | None, parameter: str) -> datetime | None:
    """An RFC 3339 date-time, read strictly (a bare number is not a time); UTC when no
    offset is given."""
    if raw is None:
        return None
    try:
        instant = datetime.fromisoformat(raw)
    except ValueError:
        detail = "An RFC 3339 date-time, such as 2026-12-01T10:00:00Z."
        raise InvalidInput(
            "The time is not valid.", [FieldError(parameter=parameter, detail=detail)]
        ) from None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


class TraceSettingsController(Controller):
    """How long the project keeps its traces."""

    path = "/trace-settings"
    tags = ("traces",)

    @get(operation_id="getTraceSettings")
    async def read(self, platform: PlatformDep, project_id: ProjectId) -> TraceSettings:
        """The project's trace retention."""
        return TraceSettings(retention_days=await service.retention_days(platform, project_id))

    @put(operation_id="updateTraceSettings")
    async def update(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        data: JSONBody[TraceSettingsUpdate],
    ) -> TraceSettings:
        """Keep traces this many days after they arrive; older ones are deleted in batches."""
        days = await service.set_retention_days(platform, project_id, data.retention_days, caller)
        return TraceSettings(retention_days=days)
