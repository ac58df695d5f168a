"""Test cases: /api/v1/datasets/{id}/test-cases (with import and export) and /api/v1/test-cases."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from litestar import Controller, Request, delete, get, patch, post
from litestar.exceptions import HTTPException
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Stream

from agentlasso.domain import test_cases as domain
from agentlasso.domain.import_reports import ImportReport
from agentlasso.domain.test_cases import ContentWarning
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.importers.formats import ImportFormat
from agentlasso.schemas.test_cases import (
    ImportResult,
    TestCase,
    TestCaseCreate,
    TestCasePage,
    TestCaseUpdate,
)
from agentlasso.services import test_cases as service
from agentlasso.services import tool_imports, transfer

JSONL_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
# Any format may also come as a plain file upload would.
_ANY = ("application/octet-stream", "text/plain")
_JSON = ("application/json", *JSONL_TYPES)
MEDIA_TYPES = {
    "jsonl": JSONL_TYPES,
    "csv": ("text/csv", "application/csv", *_ANY),
    "promptfoo": ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", *_JSON,
                  *_ANY),
    "langsmith": (*_JSON, *_ANY),
    "langfuse": (*_JSON, *_ANY),
}  # fmt: skip
ExportFormat = Literal["jsonl", "csv"]


def case_out(case: domain.TestCase, warnings: list[ContentWarning] | None = None) -> TestCase:
    """The API shape of a case at its current revision."""
    content = case.content
    return TestCase(
        id=str(case.id),
        dataset_id=str(case.dataset_id),
        revision=case.revision,
        input=content.input,
        conversation=msgspec.UNSET if content.conversation is None else content.conversation,
        checks_version=content.checks_version,
        checks=content.checks,
        evaluation_criteria_json=content.evaluation_criteria_json,
        expected_output=content.expected_output,
        evaluation_type=content.evaluation_type,
        min_confidence=content.min_confidence,
        description=content.description,
        tags=content.tags,
        created_at=case.created_at,
        updated_at=case.updated_at,
        source_trace_id=case.source_trace_id,
        tool_fixtures=content.tool_fixtures or msgspec.UNSET,
        warnings=msgspec.UNSET if warnings is None else warnings,
    )


class DatasetTestCaseController(Controller):
    """The cases of one dataset."""

    path = "/datasets/{dataset_id:str}/test-cases"
    tags = ("test cases",)

    @post(operation_id="createTestCase")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        data: JSONBody[TestCaseCreate],
    ) -> TestCase:
        """Add a test case to the dataset."""
        case, warnings = await service.create_test_case(
            platform, project_id, parse_id(dataset_id, "dataset"), data.content()
        )
        return case_out(case, warnings)

    @get(operation_id="listTestCases")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> TestCasePage:
        """The dataset's cases in order, a page at a time."""
        cases = await service.list_test_cases(
            platform,
            project_id,
            parse_id(dataset_id, "dataset"),
            decode_cursor(cursor),
            limit + 1,
        )
        return TestCasePage(
            items=[case_out(case) for case in cases[:limit]],
            next_cursor=next_cursor([case.seq for case in cases], limit),
        )

    # The import enforces its own (larger) limit while streaming, line by line.
    @post("/import", operation_id="importTestCases", status_code=201, request_max_body_size=None)
    async def import_cases(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        request: Request[Any, Any, Any],
        format: FromQuery[ImportFormat] = "jsonl",
    ) -> ImportResult | ImportReport:
        """Import JSON Lines, one case per line (or another tool's file, `format`): every case,
        or nothing; another tool's import says per source item what was not imported."""
        _require_media_type(request, format)
        settings = platform.settings
        dataset = parse_id(dataset_id, "dataset")
        if format == "jsonl":
            imported = await transfer.import_test_cases(
                platform, project_id, dataset, request.stream(),
                max_bytes=settings.max_import_bytes, max_lines=settings.max_import_lines,
            )  # fmt: skip
            return ImportResult(imported=imported)
        return await tool_imports.import_from_tool(
            platform, project_id, dataset, request.stream(), format,
            max_bytes=settings.max_import_bytes, max_cases=settings.max_import_lines,
        )  # fmt: skip

    # The media type is the format's (the OpenAPI document names both: app/api/openapi.py).
    @get("/export", operation_id="exportTestCases")
    async def export_cases(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        format: FromQuery[ExportFormat] = "jsonl",
    ) -> Stream:
        """Stream the dataset's cases as JSON Lines (or CSV) that import back unchanged."""
        chunks = await transfer.export_test_cases(
            platform, project_id, parse_id(dataset_id, "dataset"), format
        )
        if format == "csv":
            return Stream(chunks, media_type="text/csv; charset=utf-8")
        return Stream(chunks, media_type="application/x-ndjson")


def _require_media_type(request: Request[Any, Any, Any], source_format: str) -> None:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    accepted = MEDIA_TYPES[source_format]
    if media_type not in accepted:
        wanted = "application/x-ndjson (JSON Lines)" if source_format == "jsonl" else accepted[0]
        raise HTTPException(
            status_code=415, detail=f"Send the import as {wanted}, not {media_type!r}."
        )


class TestCaseController(Controller):
    """One test case by its id."""

    path = "/test-cases/{test_case_id:str}"
    tags = ("test cases",)

    @get(operation_id="getTestCase")
    async def read(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        test_case_id: FromPath[str],
    ) -> TestCase:
        """A test case at its current revision."""
        case = await service.get_test_case(
            platform, project_id, parse_id(test_case_id, "test case")
        )
        return case_out(case)

    @patch(operation_id="updateTestCase")
    async def update(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        test_case_id: FromPath[str],
        data: JSONBody[TestCaseUpdate],
    ) -> TestCase:
        """Change a test case: a new revision; runs keep the revision they ran."""
        case, warnings = await service.update_test_case(
            platform, project_id, parse_id(test_case_id, "test case"), data.apply
        )
        return case_out(case, warnings)

    @delete(operation_id="deleteTestCase")
    async def remove(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        test_case_id: FromPath[str],
    ) -> None:
        """Delete a test case."""
        case_id = parse_id(test_case_id, "test case")
        await service.delete_test_case(platform, project_id, case_id, caller)
