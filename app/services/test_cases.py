"""Writing and reading test cases; every write makes a revision."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from uuid import UUID

import asyncpg
import msgspec

from app.db import datasets as dataset_rows
from app.db import test_cases as case_rows
from app.domain.checks import OutputContains, OutputNotContains, assign_check_ids
from app.domain.checks import duplicate_check_ids as find_duplicate_ids
from app.domain.test_cases import TestCaseContent
from app.errors import FieldError, InvalidInput, NotFound
from app.grading import EXPECTATION_ID, regex_compile_error


class ContentWarning(msgspec.Struct, frozen=True):
    """Something accepted that will not work as the author probably meant."""

    check_id: str
    pointer: str
    detail: str


def content_problems(content: TestCaseContent) -> list[FieldError]:
    """What makes a case unstorable, beyond its shape (which msgspec already checked)."""
    checks = content.checks or ()
    duplicates = [
        FieldError(
            pointer=f"/checks/{index}/id",
            detail=f"Check id {checks[index].id!r} is used by more than one check.",
        )
        for index in find_duplicate_ids(checks)
    ]
    # The implicit judge check on expected_output answers to this id; a check may not take it.
    reserved = [
        FieldError(
            pointer=f"/checks/{index}/id",
            detail=f"Check id {EXPECTATION_ID!r} is reserved for the expected_output check.",
        )
        for index, check in enumerate(checks)
        if check.id == EXPECTATION_ID
    ]
    return duplicates + reserved


def prepare_content(content: TestCaseContent) -> TestCaseContent:
    """The content as it will be stored: ids assigned; InvalidInput when it cannot be."""
    problems = content_problems(content)
    if problems:
        raise InvalidInput("The test case's checks are not valid.", problems)
    if content.checks is None:
        return content
    return msgspec.structs.replace(content, checks=assign_check_ids(content.checks))


def regex_warnings(content: TestCaseContent) -> list[ContentWarning]:
    """Regular expressions that do not compile: accepted, but they will fail when graded."""
    warnings: list[ContentWarning] = []
    for index, check in enumerate(content.checks or ()):
        if isinstance(check, OutputContains | OutputNotContains) and check.regex:
            error = regex_compile_error(check.value)
            if error is not None:
                detail = f"The regular expression does not compile ({error}); it fails when graded."
                warnings.append(ContentWarning(check.id or "", f"/checks/{index}/value", detail))
    return warnings


def revision_row(
    content: TestCaseContent, test_case_id: UUID, dataset_id: UUID, revision: int
) -> tuple[Any, ...]:
    """The values of a revision row, in case_rows.REVISION_COLUMNS order."""
    return (
        uuid.uuid4(),
        test_case_id,
        dataset_id,
        revision,
        content.input,
        content.checks_version,
        content.checks,
        content.evaluation_criteria_json,
        content.expected_output,
        content.evaluation_type,
        content.min_confidence,
        content.description,
    )


def content_from_row(row: asyncpg.Record) -> TestCaseContent:
    """The stored content of a case row (checks were validated when written)."""
    return msgspec.convert(
        {
            "input": row["input"],
            "checks_version": row["checks_version"],
            "checks": row["checks"],
            "evaluation_criteria_json": row["evaluation_criteria_json"],
            "expected_output": row["expected_output"],
            "evaluation_type": row["evaluation_type"],
            "min_confidence": row["min_confidence"],
            "description": row["description"],
        },
        TestCaseContent,
    )


async def create_test_case(
    pool: asyncpg.Pool, project_id: UUID, dataset_id: UUID, content: TestCaseContent
) -> tuple[asyncpg.Record, list[ContentWarning]]:
    """Store a new case in the dataset; returns it with its regex warnings."""
    content = prepare_content(content)
    test_case_id = uuid.uuid4()
    async with pool.acquire() as connection, connection.transaction():
        if await dataset_rows.get_dataset(connection, project_id, dataset_id) is None:
            raise NotFound("No dataset with this id in your project.")
        await case_rows.insert_test_case(
            connection, revision_row(content, test_case_id, dataset_id, 1)
        )
        row = await case_rows.get_test_case(connection, project_id, test_case_id)
    assert row is not None
    return row, regex_warnings(content)


async def update_test_case(
    pool: asyncpg.Pool,
    project_id: UUID,
    test_case_id: UUID,
    change: Callable[[TestCaseContent], TestCaseContent],
) -> tuple[asyncpg.Record, list[ContentWarning]]:
    """Apply `change` to the current content and store the result as a new revision."""
    async with pool.acquire() as connection, connection.transaction():
        current_revision = await case_rows.lock_current_revision(
            connection, project_id, test_case_id
        )
        current = await case_rows.get_test_case(connection, project_id, test_case_id)
        if current_revision is None or current is None:
            raise NotFound("No test case with this id in your project.")
        content = prepare_content(change(content_from_row(current)))
        row = revision_row(content, test_case_id, current["dataset_id"], current_revision + 1)
        await case_rows.add_revision(connection, row)
        updated = await case_rows.get_test_case(connection, project_id, test_case_id)
    assert updated is not None
    return updated, regex_warnings(content)


async def get_test_case(pool: asyncpg.Pool, project_id: UUID, test_case_id: UUID) -> asyncpg.Record:
    """The case with its current revision."""
    row = await case_rows.get_test_case(pool, project_id, test_case_id)
    if row is None:
        raise NotFound("No test case with this id in your project.")
    return row


async def list_test_cases(
    pool: asyncpg.Pool, project_id: UUID, dataset_id: UUID, after_seq: int, limit: int
) -> list[asyncpg.Record]:
    """A page of the dataset's cases."""
    if await dataset_rows.get_dataset(pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    return await case_rows.list_test_cases(pool, dataset_id, after_seq, limit)


async def delete_test_case(pool: asyncpg.Pool, project_id: UUID, test_case_id: UUID) -> None:
    """Delete a case; runs that pinned its revisions keep them."""
    if not await case_rows.delete_test_case(pool, project_id, test_case_id):
        raise NotFound("No test case with this id in your project.")
