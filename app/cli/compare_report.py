"""The comparison part of a gated run's report (`ci` and `run`): the bucket counts and the new
failures, printed before the rest, and the pull-request comment of `--comment-file`.

Only what is shown is fetched: the counts and the first new failures for the console; a capped
list per bucket for the comment, however large the run."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import msgspec

from agentlasso.cli.gate_report import GateReport, case_lines, percent
from agentlasso.cli.pr_comment import (
    ComparedCase,
    ComparisonSummary,
    FailedCheck,
    write_comment_file,
)
from agentlasso.client import (
    MAX_COMPARED_PER_PAGE,
    AgentLassoClient,
    BucketCounts,
    ClientError,
    ComparedCaseOut,
    GradedResult,
    RunGate,
    case_card_url,
    trial_of,
)

NEW_FAILURES_PRINTED = 20
# The comment shows what fits in 65,000 characters: more than this would never be listed.
NEW_FAILURES_IN_COMMENT = 2_000
CASES_PER_BUCKET_IN_COMMENT = 200
# New cases are listed when they fail, so up to this many are read to find those that do.
NEW_CASES_READ = 2_000
OTHER_BUCKETS = ("still_failing", "flaky", "new_case", "fixed", "removed_case")
INPUT_PREVIEW_CHARS = 200
FINAL = ("completed", "cancelled", "failed")


class CaseText(msgspec.Struct, frozen=True, kw_only=True):
    """How a case is named to a reader: its description, else the start of its input."""

    description: str | None
    input_preview: str

    @classmethod
    def of(cls, description: str | None, input_value: Any) -> CaseText:
        """The case's description and the start of its input (JSON when not a string)."""
        if isinstance(input_value, str):
            text = input_value
        else:
            text = msgspec.json.encode(input_value).decode()
        return cls(description=description, input_preview=text[:INPUT_PREVIEW_CHARS])

    @property
    def name(self) -> str:
        return self.description or self.input_preview


class Compared(msgspec.Struct, frozen=True, kw_only=True):
    """What was read of a run's comparison: the counts, and the cases read per bucket."""

    run_id: str
    baseline_run_id: str
    counts: BucketCounts
    cases: dict[str, list[ComparedCaseOut]]


def gate_line(gate: str, threshold: float, baseline_run_id: str | None) -> str:
    """The gate and the baseline, as the run starts: one line."""
    rule = "no new failures" if gate == "no_new_failures" else f"pass rate {percent(threshold)}"
    if baseline_run_id is None:
        return f"Gate: {rule}. No baseline run: nothing to compare with, no case is a new failure."
    return f"Gate: {rule}. Baseline: run {baseline_run_id}."


def selection_line(tags: list[str] | None, dataset_version: str | None) -> str | None:
    """Which cases the run runs, when not every case at its current revision: one line."""
    parts = []
    if dataset_version is not None:
        parts.append(f"version {dataset_version} of the dataset (its frozen revisions)")
    if tags:
        parts.append(f"only the cases tagged {', '.join(tags)}")
    return None if not parts else f"Cases: {'; '.join(parts)}."


async def fetch_compared(
    client: AgentLassoClient, gate: RunGate, *, for_comment: bool, out: TextIO = sys.stdout
) -> Compared | None:
    """The ended run compared with its baseline (None without one): the first new failures,
    or with for_comment the capped lists the comment shows."""
    if gate.baseline_run_id is None or gate.status not in FINAL:
        return None
    most = NEW_FAILURES_IN_COMMENT if for_comment else NEW_FAILURES_PRINTED
    try:
        counts, new_failures = await _read_bucket(client, gate.run_id, "new_failure", most)
        compared = Compared(
            run_id=gate.run_id, baseline_run_id=gate.baseline_run_id, counts=counts,
            cases={"new_failure": new_failures},
        )  # fmt: skip
        if for_comment:
            for bucket in OTHER_BUCKETS:
                compared.cases[bucket] = await _read_other_bucket(client, compared, bucket)
    except ClientError as exc:
        # The gate stands without the comparison; say why the platform could not give it.
        print(f"No comparison with baseline run {gate.baseline_run_id}: {exc}", file=out)
        return None
    return compared


async def _read_bucket(
    client: AgentLassoClient, run_id: str, bucket: str, most: int
) -> tuple[BucketCounts, list[ComparedCaseOut]]:
    """The counts, and the first `most` cases of one bucket, a page at a time."""
    cases: list[ComparedCaseOut] = []
    cursor: str | None = None
    while True:
        limit = max(1, min(most - len(cases), MAX_COMPARED_PER_PAGE))
        page = await client.compare(run_id, bucket=bucket, cursor=cursor, limit=limit)
        cases += page.items
        cursor = page.next_cursor
        if cursor is None or len(cases) >= most:
            return page.counts, cases[:most]


async def _read_other_bucket(
    client: AgentLassoClient, compared: Compared, bucket: str
) -> list[ComparedCaseOut]:
    """A bucket's cases for the comment; of the new cases (the first NEW_CASES_READ), those
    that do not pass."""
    if getattr(compared.counts, bucket) == 0:
        return []
    if bucket != "new_case":
        _, cases = await _read_bucket(client, compared.run_id, bucket, CASES_PER_BUCKET_IN_COMMENT)
        return cases
    _, new_cases = await _read_bucket(client, compared.run_id, bucket, NEW_CASES_READ)
    return [case for case in new_cases if not _passed(case.current)]


def _passed(result: GradedResult | None) -> bool:
    return result is not None and result.graded and result.pass_fail


def report_compared(
    report: GateReport,
    compared: Compared | None,
    texts: Mapping[str, CaseText],
    comment_file: Path | None,
    out: TextIO = sys.stdout,
) -> None:
    """Print the comparison (before the rest of the report), and write the comment if asked."""
    print_compared(compared, texts, report.gate.web_url, out)
    if comment_file is not None:
        write_comment(comment_file, report.gate, compared, texts, list(report.results))


def print_compared(
    compared: Compared | None,
    texts: Mapping[str, CaseText],
    web_url: str | None,
    out: TextIO = sys.stdout,
) -> None:
    """The bucket counts, then each new failure (the first NEW_FAILURES_PRINTED) with its
    failed checks and card; nothing without a baseline (the gate line said so)."""
    if compared is None:
        return
    print(counts_line(compared.baseline_run_id, compared.counts), file=out)
    new_failures = compared.cases["new_failure"]
    names = {tc_id: text.name for tc_id, text in texts.items() if text.name}
    for item in new_failures[:NEW_FAILURES_PRINTED]:
        print("\n".join(_new_failure_lines(item, names, web_url)), file=out)
    more = compared.counts.new_failure - min(len(new_failures), NEW_FAILURES_PRINTED)
    if more > 0:
        print(f"...and {more} more new failures (see --comment-file or the run page).", file=out)


def counts_line(baseline_run_id: str, counts: BucketCounts) -> str:
    """One line with every bucket's count."""
    return (
        f"Compared with baseline run {baseline_run_id}: {counts.new_failure} new failures, "
        f"{counts.fixed} fixed, {counts.still_failing} still failing, {counts.flaky} flaky, "
        f"{counts.new_case} new cases, {counts.removed_case} removed, "
        f"{counts.still_passing} still passing."
    )


def _new_failure_lines(
    item: ComparedCaseOut, names: Mapping[str, str], web_url: str | None
) -> list[str]:
    result = item.current
    if result is None:  # a new failure has a result in this run; shown plainly if not
        return [f"NEW FAILURE {item.test_case_id}"]
    lines = case_lines(result, names)
    lines[0] = f"NEW {lines[0]}"
    if item.revision_changed:
        lines.append("    The case was edited since the baseline: a check may have changed.")
    if web_url is not None:
        lines.append(f"    Case card: {case_card_url(web_url, item.test_case_id, result.trial)}")
    return lines


def write_comment(
    path: Path,
    gate: RunGate,
    compared: Compared | None,
    texts: Mapping[str, CaseText],
    results: list[GradedResult],
) -> None:
    """Write the pull-request comment of the run: compared with its baseline, or without one
    every case is new (those that do not pass are listed)."""
    summary = (
        _summary_without_baseline(gate, texts, results)
        if compared is None
        else _summary(gate, compared, texts)
    )
    write_comment_file(path, summary)


def _summary(gate: RunGate, compared: Compared, texts: Mapping[str, CaseText]) -> ComparisonSummary:
    cases = {
        bucket: [_compared_case(item, texts, gate.web_url) for item in items]
        for bucket, items in compared.cases.items()
    }
    counts = compared.counts
    truncated = {bucket: getattr(counts, bucket) for bucket in cases}
    if "new_case" in cases:
        # Those that fail of the new cases read; any not read are counted as failing (at most).
        unread = max(0, counts.new_case - NEW_CASES_READ)
        truncated["new_case"] = len(cases["new_case"]) + unread
    return _summary_of(gate, compared.baseline_run_id, counts, cases, truncated)


def _summary_without_baseline(
    gate: RunGate, texts: Mapping[str, CaseText], results: list[GradedResult]
) -> ComparisonSummary:
    shown: dict[str, GradedResult] = {}
    for result in results:  # a case with several trials is shown by its first that failed
        if not _passed(result) and result.test_case_id not in shown:
            shown[result.test_case_id] = result
    failing = [
        _listed_case(case_id, "new_case", result, texts, gate.web_url)
        for case_id, result in shown.items()
    ]
    counts = BucketCounts(
        new_failure=0, fixed=0, still_failing=0, still_passing=0,
        new_case=len({result.test_case_id for result in results}), removed_case=0, flaky=0,
    )  # fmt: skip
    cases = {"new_case": failing[:NEW_CASES_READ]}
    return _summary_of(gate, None, counts, cases, {"new_case": len(failing)})


def _summary_of(
    gate: RunGate,
    baseline_run_id: str | None,
    counts: BucketCounts,
    cases: dict[str, list[ComparedCase]],
    truncated_from: dict[str, int],
) -> ComparisonSummary:
    return ComparisonSummary(
        run_id=gate.run_id,
        baseline_run_id=baseline_run_id,
        run_url=gate.web_url,
        gate_passed=gate.ci_pass,
        gate_reason=gate.ci_fail_reason,
        pass_rate=gate.pass_rate,
        pass_threshold=gate.pass_threshold,
        counts=counts,
        new_failures=cases.pop("new_failure", []),
        others=cases,
        truncated_from=truncated_from,
        judge_warnings=list(gate.judge_warnings),
    )


def _compared_case(
    item: ComparedCaseOut, texts: Mapping[str, CaseText], web_url: str | None
) -> ComparedCase:
    """A compared case as the comment lists it."""
    return _listed_case(
        item.test_case_id, item.bucket, item.current, texts, web_url, item.revision_changed
    )


def _listed_case(
    test_case_id: str,
    bucket: str,
    result: GradedResult | None,
    texts: Mapping[str, CaseText],
    web_url: str | None,
    revision_changed: bool = False,
) -> ComparedCase:
    """A case as the comment lists it: named, with its failed checks, linked to its card."""
    text = texts.get(test_case_id)
    failed = [
        FailedCheck(
            id=check.id,
            type=check.type,
            severity=check.severity,
            detail=check.detail,
            turn=None if check.turn is msgspec.UNSET else check.turn,
        )
        for check in (result.check_results if result is not None else [])
        if check.status != "passed"
    ]
    card = None
    if web_url is not None and result is not None:
        card = case_card_url(web_url, test_case_id, trial_of(result))
    return ComparedCase(
        test_case_id=test_case_id,
        bucket=bucket,
        description=None if text is None else text.description,
        input_preview="" if text is None else text.input_preview,
        failed_checks=failed,
        card_url=card,
        revision_changed=revision_changed,
    )
