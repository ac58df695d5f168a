"""Compare: a finished run against its baseline (or another run of its dataset), case by case,
new failures first; each case opens both replies and both verdict lists side by side."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from litestar import Controller, Request, Response, get
from litestar.params import FromPath

from agentlasso.domain.case_results import StoredResult
from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.comparisons import BUCKETS, Bucket, ComparedCase
from agentlasso.domain.grades import CheckResult
from agentlasso.domain.runs import Run
from agentlasso.domain.web import Revision
from agentlasso.errors import Conflict
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import decode_compared_cursor, encode_compared_cursor, parse_id
from agentlasso.services import comparisons as comparison_service
from agentlasso.services import datasets as dataset_service
from agentlasso.services import runs as run_service
from agentlasso.services.platform import Platform
from agentlasso.web.agent_reply import observation_of, what_the_agent_did
from agentlasso.web.conversation_views import chat, turn_of
from agentlasso.web.rendering import page, percent, when
from agentlasso.web.sessions import session_of
from agentlasso.web.tool_alignment import align_tool_calls
from agentlasso.web.word_diff import word_diff

# Each case carries both replies, a diff and two verdict lists: a short page stays quick.
PAGE_SIZE = 20
BASELINES_LISTED = 50
BUCKET_NAMES: dict[Bucket, str] = {
    "new_failure": "New failures",
    "still_failing": "Still failing",
    "flaky": "Flaky",
    "new_case": "New cases",
    "fixed": "Fixed",
    "removed_case": "Removed cases",
    "still_passing": "Still passing",
}
_BUCKETS: dict[str, Bucket] = {bucket: bucket for bucket in BUCKETS}
_NOT_YET = "The comparison is available when the run and its baseline have ended."


class ComparePages(Controller):
    """A run compared with a baseline run."""

    @get("/runs/{run_id:str}/compare", name="compare_runs")
    async def compare(
        self, request: Request[Any, Any, Any], platform: PlatformDep, run_id: FromPath[str]
    ) -> Response[Any]:
        """The buckets with their counts, and the cases of one bucket (or all, new failures
        first) a page at a time; a run still going on says when it can be compared."""
        project_id = session_of(request).project_id
        query = request.query_params
        asked = {name: str(query.get(name) or "") for name in ("baseline", "bucket")}
        baseline_id = parse_id(asked["baseline"], "baseline run") if asked["baseline"] else None
        bucket = _BUCKETS.get(asked["bucket"])
        try:
            compared = await comparison_service.compare_runs(
                platform, project_id, parse_id(run_id, "run"), baseline_id, bucket,
                decode_compared_cursor(query.get("cursor"), "Use the link to the next page."),
                PAGE_SIZE,
            )  # fmt: skip
        except Conflict:
            run = await run_service.get_run(platform, project_id, parse_id(run_id, "run"))
            return await _not_yet(request, platform, run)
        if not compared.run.is_final:
            return await _not_yet(request, platform, compared.run)
        run = compared.run
        kept = {"baseline": asked["baseline"]} if asked["baseline"] else {}
        after = compared.after
        return page(
            request, "compare.html", run=run, baseline=compared.baseline,
            dataset_name=await _dataset_name(platform, project_id, run),
            buckets=[(name, BUCKET_NAMES[name], compared.counts.get(name, 0)) for name in BUCKETS],
            total=sum(compared.counts.values()), bucket=bucket or "",
            bucket_query=urlencode(kept), page_query=urlencode({**kept, "bucket": bucket or ""}),
            cases=await _cases_shown(platform, run, compared.baseline, compared.cases),
            next_cursor=encode_compared_cursor(after),
            baseline_asked=asked["baseline"],
            baseline_choices=await baseline_choices(
                platform, project_id, run.dataset_id, "This run's own baseline"
            ),
        )  # fmt: skip


async def baseline_choices(
    platform: Platform, project_id: UUID, dataset_id: UUID, blank: str
) -> list[tuple[str, str]]:
    """The dataset's completed runs as choices of a baseline, newest first, after `blank`."""
    runs = await run_service.list_runs(
        platform, project_id, dataset_id, "completed", None, BASELINES_LISTED
    )
    return [("", blank)] + [(str(run.id), run_label(run)) for run in runs]


def run_label(run: Run) -> str:
    """A run as a person picks it from a list: when, how well, and its labels."""
    gate = "gate passed" if run.ci_pass else "gate failed"
    parts = [when(run.created_at), f"{percent(run.pass_rate)} passed", gate]
    if run.labels:
        parts.append(", ".join(f"{key}: {value}" for key, value in sorted(run.labels.items())))
    return " · ".join(parts)


async def _not_yet(
    request: Request[Any, Any, Any], platform: PlatformDep, run: Run
) -> Response[Any]:
    """The page of a comparison that cannot be made yet: 409, as the API answers it."""
    name = await _dataset_name(platform, session_of(request).project_id, run)
    return page(
        request, "compare.html", status_code=409, run=run, dataset_name=name, not_yet=_NOT_YET
    )


async def _dataset_name(platform: Platform, project_id: UUID, run: Run) -> str | None:
    names = await dataset_service.dataset_names(platform, project_id, [run.dataset_id])
    return names.get(run.dataset_id)


async def _cases_shown(
    platform: Platform,
    run: Run,
    baseline: Run | None,
    cases: list[ComparedCase],
) -> list[dict[str, Any]]:
    """Each case as its row shows it, with what the case asked (the revision that ran)."""
    shown = [case.current or case.baseline for case in cases]
    revisions = await run_service.graded_revisions(
        platform, [result for result in shown if result is not None]
    )
    asked = [_what_it_asked(revisions, result) for result in shown]
    return [
        _case_shown(run, baseline, case, description, input_text)
        for case, (description, input_text) in zip(cases, asked, strict=True)
    ]


def _what_it_asked(
    revisions: Mapping[UUID, Revision], result: StoredResult | None
) -> tuple[str | None, str]:
    """The case's description and input, as the revision of the result shown recorded them."""
    revision = None if result is None else revisions.get(result.revision_id)
    if revision is None:
        return None, ""
    content = revision.content
    raw = content.input
    if content.conversation is not None:
        turns = content.conversation.turns
        raw = turns[0].user if turns else "A conversation played by its simulated user"
    input_text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return content.description, input_text if len(input_text) <= 160 else input_text[:159] + "…"


def _case_shown(
    run: Run, baseline: Run | None, case: ComparedCase, description: str | None, input_text: str
) -> dict[str, Any]:
    before = _side(baseline, case.baseline)
    after = _side(run, case.current)
    return {
        "test_case_id": case.row.test_case_id,
        "bucket": case.row.bucket,
        "revision_changed": case.row.revision_changed,
        "description": description,
        "input": input_text,
        "baseline": before,
        "current": after,
        "checks": _checks_side_by_side(case),
        "turns": turns_side_by_side(case.baseline, case.current),
        **_differences(before, after),
    }


def turns_side_by_side(
    baseline: StoredResult | None, current: StoredResult | None
) -> list[dict[str, Any]] | None:
    """A conversation's turns in both runs, turn by turn, each with its turn's verdicts; None
    when neither result is a conversation's."""
    sides = [result for result in (baseline, current) if result is not None]
    if not any(result.turns is not None for result in sides):
        return None
    before, after = _turns_of(baseline), _turns_of(current)
    return [
        {"turn": number, "before": before.get(number), "after": after.get(number)}
        for number in sorted({*before, *after})
    ]


def _turns_of(result: StoredResult | None) -> dict[int, dict[str, Any]]:
    if result is None or result.turns is None:
        return {}
    checks = [
        {"name": PRODUCT_NAMES.get(check.type, check.type), "check": check, "turn": turn_of(check)}
        for check in result.result.check_results
    ]
    shown = chat(result.turns, checks, result.ended_by, result.not_played_reason)
    return {turn["turn"]: turn for turn in shown["turns"]}


def _side(run: Run | None, result: StoredResult | None) -> dict[str, Any] | None:
    """One run's result of the case: its verdict, what the agent did, and its card's address."""
    if run is None or result is None:
        return None
    trial = "" if result.trial == 1 else f"?trial={result.trial}"
    observation = observation_of(result)
    return {
        "result": result,
        "observation": observation,
        "did": what_the_agent_did(observation),
        "card": f"/runs/{run.id}/cases/{result.test_case_id}{trial}",
    }


def _differences(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The baseline's reply diffed against this run's, and the two tool-call sequences
    aligned; each None when one side has nothing to compare (or it is too long to)."""
    if before is None or after is None:
        return {"replies_compared": False, "diff": None, "calls_compared": False, "calls": None}
    old, new = before["observation"], after["observation"]
    replies = old.actual_output is not None and new.actual_output is not None
    calls = old.tool_calls is not None and new.tool_calls is not None
    return {
        "replies_compared": replies,
        "diff": word_diff(old.actual_output, new.actual_output) if replies else None,
        "calls_compared": calls,
        "calls": align_tool_calls(
            [call.name for call in old.tool_calls], [call.name for call in new.tool_calls]
        )
        if calls
        else None,
    }


def _checks_side_by_side(case: ComparedCase) -> list[dict[str, Any]]:
    """Every check of either result, by id: its verdict in the baseline and in this run."""
    before = _by_id(case.baseline)
    now = _by_id(case.current)
    changed = set(case.changed_checks)
    rows = []
    for check_id in dict.fromkeys([*now, *before]):
        either = now.get(check_id) or before[check_id]
        rows.append({
            "id": check_id, "name": PRODUCT_NAMES.get(either.type, either.type),
            "turn": turn_of(either),
            "before": before.get(check_id), "after": now.get(check_id),
            "changed": check_id in changed,
        })  # fmt: skip
    return rows


def _by_id(result: StoredResult | None) -> dict[str, CheckResult]:
    return {} if result is None else {check.id: check for check in result.result.check_results}
