"""Test cases: /api/v1/datasets/{id}/test-cases (with import and export) and /api/v1/test-cases."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, delete, get, patch, post
from litestar.exceptions import HTTPException
from litestar.params import FromPath, JSONBody
from litestar.response import Stream

from agentlasso.domain import test_cases as domain
from agentlasso.domain.test_cases import ContentWarning
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    next_cursor,
    parse_id,
)
from agentlasso.schemas.test_cases import (
    ImportResult,
    TestCase,
    TestCaseCreate,
    TestCasePage,
    TestCaseUpdate,
)
from agentlasso.services import test_cases as service
from agentlasso.services import transfer

JSONL_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")


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
    async def import_jsonl(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        request: Request[Any, Any, Any],
    ) -> ImportResult:
        """Import JSON Lines, one case per line: every line, or nothing."""
        _require_jsonl(request)
        settings = platform.settings
        imported = await transfer.import_test_cases(
            platform,
            project_id,
            parse_id(dataset_id, "dataset"),
            request.stream(),
            max_bytes=settings.max_import_bytes,
            max_lines=settings.max_import_lines,
        )
        return ImportResult(imported=imported)

    @get("/export", operation_id="exportTestCases", media_type="application/x-ndjson")
    async def export_jsonl(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
    ) -> Stream:
        """Stream the dataset's cases as JSON Lines that import back unchanged."""
        chunks = await transfer.export_test_cases(
            platform, project_id, parse_id(dataset_id, "dataset")
        )
        return Stream(chunks, media_type="application/x-ndjson")


def _require_jsonl(request: Request[Any, Any, Any]) -> None:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in JSONL_TYPES:
        raise HTTPException(
            status_code=415,
            detail=f"Send the import as application/x-ndjson (JSON Lines), not {media_type!r}.",
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
        test_case_id: FromPath[str],
    ) -> None:
        """Delete a test case."""
        await service.delete_test_case(platform, project_id, parse_id(test_case_id, "test case"))
