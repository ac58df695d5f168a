"""Comparisons on the wire: a run against a baseline, and a dataset's flaky cases."""

from __future__ import annotations

import msgspec

from agentlasso.domain.comparisons import Bucket
from agentlasso.schemas.run_results import StoredResult


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
