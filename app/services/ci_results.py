"""Recording what a CI client's agent did: grade, store, update the run (contract 5.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

import asyncpg
import msgspec

from app.db import case_results as result_rows
from app.db import runs as run_rows
from app.db.case_results import RESULT_COLUMNS
from app.db.pool import Connection
from app.domain.results import CaseResult, JudgeVerdict
from app.domain.test_cases import TestCaseContent
from app.errors import Conflict, FieldError, InvalidInput, NotFound
from app.grading import grade_case, judge_requests, observation_from_wire
from app.services.result_rows import result_row
from app.services.runs import store_gate
from app.services.test_cases import content_from_row

NO_JUDGE = "no judge is configured on this server."


class PostedResult(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One case's result as a client posted it; absent fields stay UNSET."""

    test_case_id: str
    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    # An extension for clients like `agentlasso ci`: the call to the agent failed, and why.
    agent_error: Annotated[str, msgspec.Meta(max_length=2000)] | None = None


class GradedCase(msgspec.Struct, frozen=True, kw_only=True):
    """A posted case with its grade."""

    test_case_id: str
    result: CaseResult


class RecordedBatch(msgspec.Struct, frozen=True, kw_only=True):
    """The run after a batch, and the grade of every case in the batch."""

    run: Any  # asyncpg.Record
    graded: list[GradedCase]


def batch_problems(results: list[PostedResult]) -> list[FieldError]:
    """Cases posted twice in one batch (the second and later occurrences)."""
    seen: set[str] = set()
    problems = []
    for index, posted in enumerate(results):
        if posted.test_case_id in seen:
            problems.append(
                FieldError(
                    pointer=f"/results/{index}/test_case_id",
                    detail=f"Test case {posted.test_case_id} is posted twice in this batch.",
                )
            )
        seen.add(posted.test_case_id)
    return problems


def verdicts_for(content: TestCaseContent) -> Mapping[str, JudgeVerdict]:
    """Judge verdicts for the case. No judge yet: every judge check is not graded, with why."""
    return {
        request.check_id: JudgeVerdict.unavailable(NO_JUDGE) for request in judge_requests(content)
    }


def grade_posted(content: TestCaseContent, posted: PostedResult) -> CaseResult:
    """Grade one posted result against its pinned content."""
    observation = observation_from_wire(posted.actual_output, posted.actual_tool_calls)
    if posted.agent_error is not None:
        observation = msgspec.structs.replace(observation, agent_error=posted.agent_error)
    return grade_case(content, observation, verdicts_for(content))


def _parse_case_ids(results: list[PostedResult]) -> tuple[list[UUID | None], list[UUID]]:
    parsed: list[UUID | None] = []
    for posted in results:
        try:
            parsed.append(UUID(posted.test_case_id))
        except ValueError:
            parsed.append(None)
    return parsed, [case_id for case_id in parsed if case_id is not None]


def _not_in_run(
    results: list[PostedResult], parsed: list[UUID | None], pinned: Mapping[UUID, Any]
) -> list[FieldError]:
    return [
        FieldError(
            pointer=f"/results/{index}/test_case_id",
            detail=f"Test case {posted.test_case_id} is not in this run.",
        )
        for index, (posted, case_id) in enumerate(zip(results, parsed, strict=True))
        if case_id is None or case_id not in pinned
    ]


async def record_results(
    pool: asyncpg.Pool, project_id: UUID, run_id: UUID, results: list[PostedResult]
) -> RecordedBatch:
    """Grade and store a batch; a case posted again replaces its earlier result."""
    problems = batch_problems(results)
    if problems:
        raise InvalidInput("A test case appears more than once in this batch.", problems)
    parsed, case_ids = _parse_case_ids(results)
    async with pool.acquire() as connection:
        run = await run_rows.get_run(connection, project_id, run_id)
        if run is None:
            raise NotFound("No run with this id in your project.")
        pinned = {row["test_case_id"]: row for row in
                  await run_rows.pinned_cases_by_id(connection, run_id, case_ids)}  # fmt: skip
        missing = _not_in_run(results, parsed, pinned)
        if missing:
            raise InvalidInput(f"{len(missing)} posted test case(s) are not in this run.", missing)
        graded, rows = _grade_batch(run_id, results, parsed, pinned)
        async with connection.transaction():
            run = await _store_batch(connection, project_id, run_id, case_ids, rows, graded)
    return RecordedBatch(run=run, graded=graded)


def _grade_batch(
    run_id: UUID,
    results: list[PostedResult],
    parsed: list[UUID | None],
    pinned: Mapping[UUID, Any],
) -> tuple[list[GradedCase], list[tuple[Any, ...]]]:
    graded: list[GradedCase] = []
    rows: list[tuple[Any, ...]] = []
    contents: dict[UUID, TestCaseContent] = {}
    for posted, case_id in zip(results, parsed, strict=True):
        assert case_id is not None
        revision = pinned[case_id]
        content = contents.get(case_id) or content_from_row(revision)
        contents[case_id] = content
        result = grade_posted(content, posted)
        graded.append(GradedCase(test_case_id=posted.test_case_id, result=result))
        rows.append(
            result_row(
                run_id, case_id, 1, revision["revision_id"], result,
                actual_output=posted.actual_output, actual_tool_calls=posted.actual_tool_calls,
                agent_error=posted.agent_error,
            )
        )  # fmt: skip
    return graded, rows


async def _store_batch(
    connection: Connection,
    project_id: UUID,
    run_id: UUID,
    case_ids: list[UUID],
    rows: list[tuple[Any, ...]],
    graded: list[GradedCase],
) -> asyncpg.Record:
    # The run row lock serialises batches of one run, so the counter deltas stay exact.
    run = await run_rows.lock_run(connection, project_id, run_id)
    assert run is not None
    if run["status"] == "cancelled":
        raise Conflict("The run was cancelled; it takes no more results.")
    if run["mode"] != "ci":
        raise Conflict("This run calls the agent itself (server mode); it takes no posted results.")
    replaced = await result_rows.delete_replaced(connection, run_id, 1, case_ids)
    await result_rows.copy_results(connection, rows)
    errors_posted = sum(row[RESULT_COLUMNS.index("errored")] for row in rows)
    delta = counter_delta([case.result for case in graded], errors_posted, replaced)
    run = await run_rows.apply_counts(connection, run_id, delta)
    return await store_gate(connection, run)


def counter_delta(
    new: list[CaseResult], errors_posted: int, replaced: list[asyncpg.Record]
) -> tuple[int, ...]:
    """(done, graded, passed, errored, no_checks) the new results add, less the replaced ones."""
    graded = sum(r.graded for r in new) - sum(old["graded"] for old in replaced)
    passed = sum(r.graded and r.pass_fail for r in new) - sum(
        old["graded"] and old["pass_fail"] for old in replaced
    )
    no_checks = sum(not r.check_results for r in new) - sum(old["no_checks"] for old in replaced)
    errored = errors_posted - sum(old["errored"] for old in replaced)
    return (len(new) - len(replaced), graded, passed, errored, no_checks)
