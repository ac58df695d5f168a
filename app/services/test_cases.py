"""Writing and reading test cases; every write makes a revision."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from uuid import UUID

import msgspec

from agentlasso.db import case_results as result_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import test_cases as case_rows
from agentlasso.db.pool import Connection
from agentlasso.domain.audit import Caller
from agentlasso.domain.checks import Check, OutputContains, OutputNotContains, assign_check_ids
from agentlasso.domain.conversations import conversation_problems
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.stored_text import nul_problems
from agentlasso.domain.test_cases import (
    ContentWarning,
    TestCase,
    TestCaseContent,
    fold_tags,
    with_conversation_ids,
)
from agentlasso.domain.web import CaseFilter, Revision
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound, StaleRevision
from agentlasso.grading import EXPECTATION_ID, regex_compile_error
from agentlasso.grading.written_checks import written_check_problems
from agentlasso.services import audit
from agentlasso.services.platform import Platform


def content_problems(content: TestCaseContent) -> list[FieldError]:
    """What makes a case unstorable, beyond its shape (which msgspec already checked)."""
    return (
        kind_problems(content)
        + _check_id_problems(content)
        + _check_field_problems(content)
        + nul_problems(msgspec.structs.asdict(content))
    )


def kind_problems(content: TestCaseContent) -> list[FieldError]:
    """A case is single-turn (`input`) or a conversation, never both and never neither."""
    if content.conversation is None:
        if content.input is None:
            detail = "A test case needs an input (or a conversation)."
            return [FieldError(pointer="/input", detail=detail)]
        return []
    if content.input is not None:
        detail = "A test case has an input or a conversation, never both."
        return [FieldError(pointer="/conversation", detail=detail)]
    if content.evaluation_criteria_json:
        # Its older criteria would become checks numbered apart from the turns' (4.4).
        detail = (
            "evaluation_criteria_json is for single-turn cases: a conversation's checks are its "
            "turns' and its own checks lists."
        )
        return [FieldError(pointer="/evaluation_criteria_json", detail=detail)]
    problems = conversation_problems(content.conversation)
    return [FieldError(pointer=pointer, detail=detail) for pointer, detail in problems]


def _placed_checks(content: TestCaseContent) -> list[tuple[str, Check]]:
    """Every check of the case (its turns' too), with the JSON pointer it was written at."""
    placed = [(f"/checks/{index}", check) for index, check in enumerate(content.checks or ())]
    if content.conversation is not None:
        placed += [
            (f"/conversation/turns/{turn}/checks/{index}", check)
            for turn, scripted in enumerate(content.conversation.turns)
            for index, check in enumerate(scripted.checks)
        ]
    return placed


def _check_id_problems(content: TestCaseContent) -> list[FieldError]:
    """Check ids are unique within the whole case (its turns' checks too), and none may take
    the id the implicit judge check on expected_output answers to."""
    problems: list[FieldError] = []
    seen: set[str] = set()
    for at, check in _placed_checks(content):
        pointer = f"{at}/id"
        if check.id is None:
            continue
        if check.id == EXPECTATION_ID:
            detail = f"Check id {EXPECTATION_ID!r} is reserved for the expected_output check."
            problems.append(FieldError(pointer=pointer, detail=detail))
        elif check.id in seen:
            detail = f"Check id {check.id!r} is used by more than one check."
            problems.append(FieldError(pointer=pointer, detail=detail))
        seen.add(check.id)
    return problems


def _check_field_problems(content: TestCaseContent) -> list[FieldError]:
    """Schemas that cannot be compiled and matchers that cannot be used, each where it is."""
    return [
        FieldError(pointer=at + below, detail=detail)
        for at, check in _placed_checks(content)
        for below, detail in written_check_problems(check)
    ]


def prepare_content(content: TestCaseContent) -> TestCaseContent:
    """The content as it will be stored: ids assigned; InvalidInput when it cannot be."""
    problems = content_problems(content)
    if problems:
        raise InvalidInput("The test case is not valid.", problems)
    content = msgspec.structs.replace(content, tags=fold_tags(content.tags))
    if content.conversation is not None:
        return with_conversation_ids(content)
    if content.checks is None:
        return content
    return msgspec.structs.replace(content, checks=assign_check_ids(content.checks))


def regex_warnings(content: TestCaseContent) -> list[ContentWarning]:
    """Regular expressions that do not compile: accepted, but they will fail when graded."""
    placed = [(f"/checks/{index}", check) for index, check in enumerate(content.checks or ())]
    if content.conversation is not None:
        placed += [
            (f"/conversation/turns/{turn}/checks/{index}", check)
            for turn, scripted in enumerate(content.conversation.turns)
            for index, check in enumerate(scripted.checks)
        ]
    warnings: list[ContentWarning] = []
    for at, check in placed:
        if isinstance(check, OutputContains | OutputNotContains) and check.regex:
            error = regex_compile_error(check.value)
            if error is not None:
                detail = f"The regular expression does not compile ({error}); it fails when graded."
                warnings.append(ContentWarning(check.id or "", f"{at}/value", detail))
    return warnings


async def create_test_case(
    platform: Platform,
    project_id: UUID,
    dataset_id: UUID,
    content: TestCaseContent,
    *,
    source_trace_id: str | None = None,
) -> tuple[TestCase, list[ContentWarning]]:
    """Store a new case in the dataset; returns it with its regex warnings."""
    content = prepare_content(content)
    async with platform.pool.acquire() as connection, connection.transaction():
        case = await add_test_case(
            platform, connection, project_id, dataset_id, content, source_trace_id
        )
    return case, regex_warnings(content)


async def add_test_case(
    platform: Platform,
    connection: Connection,
    project_id: UUID,
    dataset_id: UUID,
    content: TestCaseContent,
    source_trace_id: str | None = None,
) -> TestCase:
    """Store a new case (content already prepared) in the caller's transaction."""
    if await dataset_rows.get_dataset(connection, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    test_case_id = uuid.uuid4()
    values = case_rows.revision_values(uuid.uuid4(), test_case_id, dataset_id, 1, content)
    await case_rows.insert_test_case(connection, values, source_trace_id)
    await count_new_cases(platform, connection, dataset_id, 1)
    case = await case_rows.get_test_case(connection, project_id, test_case_id)
    assert case is not None, "the case was inserted in this transaction"
    return case


async def update_test_case(
    platform: Platform,
    project_id: UUID,
    test_case_id: UUID,
    change: Callable[[TestCaseContent], TestCaseContent],
    *,
    based_on: int | None = None,
) -> tuple[TestCase, list[ContentWarning]]:
    """Apply `change` to the current content and store the result as a new revision.

    `based_on` is the revision the change was made to, when the writer knows it: if another
    revision was saved since, StaleRevision, and nothing is stored."""
    async with platform.pool.acquire() as connection, connection.transaction():
        current_revision = await case_rows.lock_current_revision(
            connection, project_id, test_case_id
        )
        current = await case_rows.get_test_case(connection, project_id, test_case_id)
        if current_revision is None or current is None:
            raise NotFound("No test case with this id in your project.")
        if based_on is not None and based_on != current_revision:
            raise StaleRevision(
                f"Revision {current_revision} of this case was saved after you opened revision "
                f"{based_on}. Your edits are still here: see what changed in the revision "
                "history, then Save again to make yours the next revision.",
                current_revision,
            )
        content = prepare_content(change(current.content))
        values = case_rows.revision_values(
            uuid.uuid4(), test_case_id, current.dataset_id, current_revision + 1, content
        )
        await case_rows.add_revision(connection, values)
        updated = await case_rows.get_test_case(connection, project_id, test_case_id)
    assert updated is not None
    return updated, regex_warnings(content)


async def get_test_case(platform: Platform, project_id: UUID, test_case_id: UUID) -> TestCase:
    """The case with its current revision."""
    case = await case_rows.get_test_case(platform.pool, project_id, test_case_id)
    if case is None:
        raise NotFound("No test case with this id in your project.")
    return case


async def get_test_case_with_dataset(
    platform: Platform, project_id: UUID, test_case_id: UUID
) -> tuple[TestCase, Dataset]:
    """The case with its current revision, and the dataset it is in."""
    found = await case_rows.get_test_case_with_dataset(platform.pool, project_id, test_case_id)
    if found is None:
        raise NotFound("No test case with this id in your project.")
    return found


async def list_test_cases(
    platform: Platform, project_id: UUID, dataset_id: UUID, after_seq: int, limit: int
) -> list[TestCase]:
    """A page of the dataset's cases."""
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise NotFound("No dataset with this id in your project.")
    return await case_rows.list_test_cases(platform.pool, dataset_id, after_seq, limit)


async def find_test_cases(
    platform: Platform, dataset_id: UUID, where: CaseFilter, after_seq: int, limit: int
) -> list[TestCase]:
    """A page of the dataset's cases matching the filter (the caller has checked the dataset
    is the project's)."""
    return await case_rows.find_test_cases(platform.pool, dataset_id, where, after_seq, limit)


async def outcomes_in_run(
    platform: Platform, run_id: UUID, test_case_ids: list[UUID]
) -> dict[UUID, str]:
    """How these cases came out in a run of their dataset (absent: no result)."""
    return await result_rows.outcomes(platform.pool, run_id, test_case_ids)


async def case_revisions(
    platform: Platform, project_id: UUID, test_case_id: UUID, limit: int
) -> list[Revision]:
    """The case's revisions, newest first; NotFound when it is not in this project."""
    found = await case_rows.revisions(platform.pool, project_id, test_case_id, limit)
    if not found:
        raise NotFound("No test case with this id in your project.")
    return found


async def count_new_cases(
    platform: Platform, connection: Connection, dataset_id: UUID, added: int
) -> None:
    """Count cases added to a dataset; Conflict when that takes it over the project quota."""
    count = await case_rows.count_new_cases(connection, dataset_id, added)
    limit = platform.settings.quota_dataset_cases
    if count > limit:
        raise Conflict(
            f"A dataset may hold {limit:,} test cases; this would make it {count:,}. "
            "Split the cases over several datasets."
        )


async def delete_test_case(
    platform: Platform, project_id: UUID, test_case_id: UUID, caller: Caller
) -> None:
    """Delete a case; runs that pinned its revisions keep them."""
    async with platform.pool.acquire() as connection, connection.transaction():
        dataset_id = await case_rows.delete_test_case(connection, project_id, test_case_id)
        if dataset_id is None:
            raise NotFound("No test case with this id in your project.")
        await audit.record(
            connection, project_id, caller, "test_case.deleted",
            audit.about("test_case", test_case_id), dataset_id=str(dataset_id),
        )  # fmt: skip
