"""/api/v1/eval-runs/{id}/compare: a run against a baseline run, case by case."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec
from agentlasso.api.run_results import MAX_PAGE_BYTES, StoredResult, stored_result_out
from agentlasso.domain.comparisons import BUCKETS, Bucket, ComparedCase, FlakyCase
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    COMPARE_CURSOR,
    decode_compared_cursor,
    encode_compared_cursor,
    parse_id,
)
from agentlasso.services import comparisons
from litestar import Controller, MediaType, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, QueryParameter

MAX_COMPARED = 200
_CURSOR_HINT = "The next_cursor of the previous page."
# A flaky case is told by its last runs: enough to see flips, few enough to read fast.
DEFAULT_RECENT_RUNS = 10
MAX_RECENT_RUNS = 50
CompareLimit = Annotated[
    int, QueryParameter(ge=1, le=MAX_COMPARED, description="Cases per page (both results each).")
]
CompareCursor = Annotated[
    str | None,
    QueryParameter(pattern=COMPARE_CURSOR.pattern, description=_CURSOR_HINT),
]
BaselineParameter = Annotated[
    UUID | None,
    QueryParameter(description="A run of the same dataset; default: the run's own."),
]
_encoder = msgspec.json.Encoder()


class BucketCounts(msgspec.Struct, kw_only=True):
    """How many cases fall in each bucket."""

    new_failure: int
    fixed: int
    still_failing: int
    still_passing: int
    new_case: int
    removed_case: int
    flaky: int


class ComparedCaseOut(msgspec.Struct, kw_only=True):
    """One case in both runs: its bucket, the checks whose verdict changed, and both results
    (null on the side that has none; with several trials, the first that did not pass)."""

    test_case_id: str
    bucket: Bucket
    changed_checks: list[str]
    # The case was edited between the runs: a new failure may be a changed check, not a
    # changed agent.
    revision_changed: bool
    current: StoredResult | None
    baseline: StoredResult | None


class ComparisonOut(msgspec.Struct, kw_only=True):
    """A run compared with a baseline: bucket counts, and a page of cases, new failures first."""

    run_id: str
    baseline_run_id: str | None
    counts: BucketCounts
    next_cursor: str | None
    items: list[ComparedCaseOut]


class ComparisonController(Controller):
    """Comparing runs."""

    path = "/eval-runs/{run_id:str}/compare"
    tags = ("runs",)

    @get(
        operation_id="compareRuns",
        # The page is encoded as it is filled (to stop short of MAX_PAGE_BYTES): its shape.
        responses={200: ResponseSpec(data_container=ComparisonOut, description="A comparison")},
    )
    async def compare(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        run_id: FromPath[str],
        baseline: BaselineParameter = None,
        bucket: FromQuery[Bucket | None] = None,
        limit: CompareLimit = 50,
        cursor: CompareCursor = None,
    ) -> Response[bytes]:
        """The run against its baseline (or another run of its dataset): how many cases are new
        failures, fixed, still failing, ... and the cases a page at a time, new failures first.
        Both runs must have ended; a page stops short of 8 MiB."""
        page = await comparisons.compare_runs(
            platform, project_id, parse_id(run_id, "run"), baseline, bucket,
            decode_compared_cursor(cursor, _CURSOR_HINT), limit,
        )  # fmt: skip
        items, cut_after = _items_within_bytes(page.cases)
        head = _encoder.encode(
            ComparisonOut(
                run_id=str(page.run.id),
                baseline_run_id=None if page.baseline is None else str(page.baseline.id),
                counts=BucketCounts(**page.counts),
                next_cursor=encode_compared_cursor(cut_after or page.after),
                items=[],
            )
        )
        assert head.endswith(b"[]}"), "items is the last field"
        body = head[:-2] + b",".join(items) + b"]}"
        return Response(content=body, media_type=MediaType.JSON)


def _items_within_bytes(
    cases: list[ComparedCase],
) -> tuple[list[bytes], tuple[int, int] | None]:
    """The cases as the API shows them, encoded once each, stopping before MAX_PAGE_BYTES;
    where to go on from when the page was cut (None: it was not)."""
    items: list[bytes] = []
    size = 0
    for case in cases:
        item = _encoder.encode(_out(case))
        size += len(item)
        if items and size > MAX_PAGE_BYTES:
            last = cases[len(items) - 1].row
            return items, (BUCKETS.index(last.bucket) + 1, last.seq)
        items.append(item)
    return items, None


def _out(case: ComparedCase) -> ComparedCaseOut:
    return ComparedCaseOut(
        test_case_id=str(case.row.test_case_id),
        bucket=case.row.bucket,
        changed_checks=case.changed_checks,
        revision_changed=case.row.revision_changed,
        current=None
        if case.current is None
        else stored_result_out(case.current, case.current_trials),
        baseline=None
        if case.baseline is None
        else stored_result_out(case.baseline, case.baseline_trials),
    )


RecentRuns = Annotated[
    int, QueryParameter(ge=2, le=MAX_RECENT_RUNS, description="Completed runs to look back on.")
]
FlakyLimit = Annotated[int, QueryParameter(ge=1, le=1000, description="Cases to list at most.")]


class FlakyCaseOut(msgspec.Struct, kw_only=True):
    """A case whose verdict flipped with no change to the case or the agent."""

    test_case_id: str
    description: str | None
    # The start of the case's input (160 characters at most).
    input: str
    # Runs that graded the case as it is now, how many it passed, and how many flipped.
    runs: int
    passed: int
    flips: int
    flip_rate: float


class FlakyCases(msgspec.Struct, kw_only=True):
    """A dataset's flakiest cases over its recent completed runs, flakiest first."""

    dataset_id: str
    runs: int
    items: list[FlakyCaseOut]


class FlakyController(Controller):
    """Cases that flip between runs."""

    path = "/datasets/{dataset_id:str}/flaky"
    tags = ("datasets",)

    @get(operation_id="listFlakyCases")
    async def flaky(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        dataset_id: FromPath[str],
        runs: RecentRuns = DEFAULT_RECENT_RUNS,
        limit: FlakyLimit = 100,
    ) -> FlakyCases:
        """Cases whose verdict flipped across the dataset's last `runs` completed runs (or whose
        trials disagreed in one), the case and the agent unchanged, with their flip rate."""
        found = await comparisons.flaky_cases(
            platform, project_id, parse_id(dataset_id, "dataset"), runs, limit
        )
        return FlakyCases(
            dataset_id=dataset_id,
            runs=runs,
            items=[_flaky_out(case) for case in found],
        )


def _flaky_out(case: FlakyCase) -> FlakyCaseOut:
    return FlakyCaseOut(
        test_case_id=str(case.test_case_id), description=case.description, input=case.input,
        runs=case.runs, passed=case.passed, flips=case.flips, flip_rate=round(case.flip_rate, 4),
    )  # fmt: skip
