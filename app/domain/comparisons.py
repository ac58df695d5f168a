"""Comparing a run with a baseline run of the same dataset, case by case."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from agentlasso.domain.case_results import StoredResult, TrialSummary

Bucket = Literal[
    "new_failure", "still_failing", "flaky", "new_case", "fixed", "removed_case", "still_passing"
]
# The order a comparison lists its cases in: what broke since the baseline first. A bucket's
# rank is its place here, counted from 1 (the stored rank).
BUCKETS: tuple[Bucket, ...] = (
    "new_failure", "still_failing", "flaky", "new_case", "fixed", "removed_case", "still_passing"
)  # fmt: skip


def rank_of(bucket: Bucket) -> int:
    """The stored rank of a bucket."""
    return BUCKETS.index(bucket) + 1


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """A run compared with a baseline: how many cases are in each bucket, and how many passed in
    the baseline but do not pass now (new failures, and flaky cases that passed before)."""

    run_id: UUID
    baseline_run_id: UUID
    counts: dict[Bucket, int]
    new_failures: int


class ComparedRow(msgspec.Struct, frozen=True, kw_only=True):
    """One case of a comparison as stored: its bucket, and the trial each side shows."""

    test_case_id: UUID
    bucket: Bucket
    seq: int
    revision_changed: bool
    current_trial: int | None
    baseline_trial: int | None


class ComparedCase(msgspec.Struct, frozen=True, kw_only=True):
    """One case of a comparison with its two results (None on the side that has none)."""

    row: ComparedRow
    current: StoredResult | None
    baseline: StoredResult | None
    # Each side's trials of the case taken together (None on the side that has none).
    current_trials: TrialSummary | None = None
    baseline_trials: TrialSummary | None = None

    @property
    def changed_checks(self) -> list[str]:
        """Ids of the checks whose verdict is not the same in both results."""
        if self.current is None or self.baseline is None:
            return []
        now = {check.id: check.status for check in self.current.result.check_results}
        before = {check.id: check.status for check in self.baseline.result.check_results}
        # A check only one side has (the case was edited in between) changed too.
        return [
            check for check in dict.fromkeys([*now, *before]) if now.get(check) != before.get(check)
        ]


class FlakyCase(msgspec.Struct, frozen=True, kw_only=True):
    """A case whose verdict flipped across a dataset's recent runs, the case and agent unchanged."""

    test_case_id: UUID
    # Runs that graded the case at its current revision, and in how many it passed.
    runs: int
    passed: int
    # Runs whose verdict differs from the run before (with the same agent), or whose trials
    # disagree.
    flips: int
    # The case as it is now: its description, and the start of its input.
    description: str | None
    input: str

    @property
    def flip_rate(self) -> float:
        """Flips per run."""
        return self.flips / self.runs
