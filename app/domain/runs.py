"""A run as stored: its settings, status, counters and judge usage (one row of eval_runs)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

from agentlasso.domain.grades import RunCounts

RunStatus = Literal[
    "queued", "running", "awaiting_results", "grading", "completed", "cancelled", "failed"
]
RunMode = Literal["ci", "server"]
RunGate = Literal["threshold", "no_new_failures"]
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "cancelled", "failed"})
# Items (agent calls) per chunk at most: large enough to amortise a chunk's queries, small
# enough that a worker dying mid-chunk redoes little and a chunk's slowest call holds up few.
MAX_CHUNK_SIZE = 50


def lanes_for(concurrency: int) -> int:
    """How many lanes (chunks called at once) share a run's concurrency."""
    return math.ceil(max(1, concurrency) / MAX_CHUNK_SIZE)


# A server-mode run whose lanes still call the agent.
CALLING_STATUSES: frozenset[str] = frozenset({"queued", "running"})


class Run(msgspec.Struct, frozen=True, kw_only=True):
    """A run; the field names are the table's column names, so a row converts without mapping."""

    id: UUID
    project_id: UUID
    dataset_id: UUID
    seq: int
    mode: RunMode
    status: RunStatus
    pass_threshold: float
    trials: int
    labels: dict[str, str] | None
    idempotency_key: str | None
    # SHA-256 of the creating request: the same idempotency key with another body is a conflict.
    request_hash: bytes | None
    # Case results the run expects (test cases x trials), and those received so far.
    total: int
    done: int
    graded: int
    passed: int
    errored: int
    no_checks: int
    pass_rate: float | None
    ci_pass: bool
    ci_fail_reason: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    agent_id: UUID | None
    concurrency: int | None
    case_count: int
    chunk_size: int | None
    started_at: datetime | None
    # Results whose AI judge checks wait for verdicts: the run does not pass until none do.
    judge_pending: int
    judge_use_cache: bool
    # Why the run stopped asking the judge (its key was refused), when it did.
    judge_stopped: str | None
    judge_calls: int
    judge_cached: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_cache_read_tokens: int
    judge_cache_write_tokens: int
    judge_cost_usd: float
    # "threshold": the pass rate decides; "no_new_failures": a case that passed in the baseline
    # and fails now does.
    gate: RunGate = "threshold"
    # The run this one is compared with, fixed when it was created; None when it has none.
    baseline_run_id: UUID | None = None
    # Cases that passed in the baseline and do not pass now, counted when the run completed.
    new_failures: int | None = None
    # Counted by case (every trial of a case together) when the run completed; None before.
    cases_graded: int | None = None
    # Every trial passed (pass^k); some trial passed (pass@k); the trials disagree.
    cases_passed: int | None = None
    cases_passed_any: int | None = None
    flaky_count: int | None = None
    # Only the cases with one of these tags ran; None: every case.
    tags: list[str] | None = None
    # The dataset version whose frozen revisions ran, by id and name; None: the current ones.
    dataset_version_id: UUID | None = None
    dataset_version: str | None = None
    # Each judge criterion of the run people have not checked enough, in words; decided when the
    # run completes (contract section 15), None before.
    judge_warnings: list[str] | None = None
    # Not a column: stores counted since the run's row last took them in (app/db/run_counts.py).
    unfolded: int = 0

    @property
    def is_final(self) -> bool:
        """Completed, cancelled or failed: nothing about it changes any more."""
        return self.status in FINAL_STATUSES

    @property
    def failed(self) -> int:
        """Graded results that did not pass."""
        return self.graded - self.passed

    @property
    def not_graded(self) -> int:
        """Results received that could not be graded."""
        return self.done - self.graded

    def case_counts(self) -> RunCounts | None:
        """The counters by case rather than by trial, once the run has counted them (a case
        passes only when every trial passed); None before."""
        if self.cases_graded is None or self.cases_passed is None:
            return None
        return RunCounts(
            total=self.case_count, done=self.case_count, graded=self.cases_graded,
            passed=self.cases_passed, no_checks=self.no_checks // max(1, self.trials),
        )  # fmt: skip

    @property
    def pass_at_k_rate(self) -> float | None:
        """Graded cases with a passing trial, as a share of graded cases."""
        if not self.cases_graded or self.cases_passed_any is None:
            return None
        return self.cases_passed_any / self.cases_graded

    @property
    def pass_all_k_rate(self) -> float | None:
        """Graded cases whose every trial passed (pass^k), as a share of graded cases."""
        if not self.cases_graded or self.cases_passed is None:
            return None
        return self.cases_passed / self.cases_graded

    def counts(self) -> RunCounts:
        """The counters the gate is decided from."""
        return RunCounts(
            total=self.total,
            done=self.done,
            graded=self.graded,
            passed=self.passed,
            no_checks=self.no_checks,
        )


class ResultFlags(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one case result counts for in its run's counters."""

    graded: bool
    pass_fail: bool
    errored: bool
    no_checks: bool
    judge_pending: bool


class Counters(msgspec.Struct, frozen=True, kw_only=True):
    """A move of a run's counters: what some results add, or the difference two sets make."""

    done: int = 0
    graded: int = 0
    passed: int = 0
    errored: int = 0
    no_checks: int = 0
    judge_pending: int = 0

    @classmethod
    def counting(cls, results: Iterable[ResultFlags]) -> Counters:
        """What these results count for."""
        done = graded = passed = errored = no_checks = judge_pending = 0
        for flags in results:
            done += 1
            graded += flags.graded
            passed += flags.graded and flags.pass_fail
            errored += flags.errored
            no_checks += flags.no_checks
            judge_pending += flags.judge_pending
        return cls(
            done=done, graded=graded, passed=passed, errored=errored, no_checks=no_checks,
            judge_pending=judge_pending,
        )  # fmt: skip

    @classmethod
    def replacing(cls, removed: Iterable[ResultFlags], added: Iterable[ResultFlags]) -> Counters:
        """How the counters move when `added` results replace `removed` ones."""
        return cls.counting(added).less(cls.counting(removed))

    def less(self, other: Counters) -> Counters:
        """These counts with another's taken away."""
        return Counters(
            done=self.done - other.done,
            graded=self.graded - other.graded,
            passed=self.passed - other.passed,
            errored=self.errored - other.errored,
            no_checks=self.no_checks - other.no_checks,
            judge_pending=self.judge_pending - other.judge_pending,
        )


class ChunkRef(msgspec.Struct, frozen=True):
    """A chunk of a run's work as a job carries it: only ids, the rest is in PostgreSQL."""

    run_id: UUID
    chunk_no: int
    job_id: str


def is_judge_job(job_id: str) -> bool:
    """Whether a chunk's job id ('chunk:<run>:<chunk_no>:<attempt>', app/db/chunks.py) is a
    judge chunk's: those are numbered -1, -2, ... and call no agent."""
    parts = job_id.split(":")
    return len(parts) == 4 and parts[2].startswith("-")


class ClaimedChunk(msgspec.Struct, frozen=True):
    """A chunk a worker now holds: agent calls, or the result rows awaiting verdicts."""

    kind: Literal["agent", "judge"]
    # Judge chunks only: the result rows (their seq) whose verdicts are awaited.
    seqs: tuple[int, ...]
    # 1 on the first try; more after its worker died or its job was lost.
    attempt: int = 1
