"""/api/v1/eval-runs/{id}/compare: a run against a baseline run, case by case."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, MediaType, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, QueryParameter

from agentlasso.api.run_results import MAX_PAGE_BYTES, stored_result_out
from agentlasso.domain.comparisons import BUCKETS, Bucket, ComparedCase, FlakyCase
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import (
    COMPARE_CURSOR,
    decode_compared_cursor,
    encode_compared_cursor,
    parse_id,
)
from agentlasso.schemas.comparisons import (
    BucketCounts,
    ComparedCaseOut,
    ComparisonOut,
    FlakyCaseOut,
    FlakyCases,
)
from agentlasso.services import comparisons

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
