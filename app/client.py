"""A small typed client for the AgentLasso API, for CI scripts (and `agentlasso ci`).

    async with AgentLassoClient("http://127.0.0.1:8000", api_key) as client:
        run = await client.create_run(dataset_id, pass_threshold=1.0)
        answer = await client.post_results(run.run_id, [ResultToPost(test_case_id=..., ...)])
        sys.exit(0 if answer.ci_pass else 1)

Responses decode leniently (unknown fields are ignored), so a newer server does not break an
older client.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, TypeVar

import httpx
import msgspec

T = TypeVar("T")
# The most results one POST /eval-run-results may carry (the server's MAX_RESULTS_PER_POST).
MAX_RESULTS_PER_POST = 10_000
# The most compared cases one page of GET /eval-runs/{id}/compare holds (the server's
# MAX_COMPARED).
MAX_COMPARED_PER_PAGE = 200
PageT = TypeVar("PageT", "ResultPage", "TestCasePage")


class ClientError(Exception):
    """The API answered with an error (a problem+json body)."""

    def __init__(self, status: int, detail: str, errors: list[dict[str, Any]] | None = None):
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.errors = status, detail, errors or []


class PlatformUnavailable(Exception):
    """The platform could not be reached, or answered with a server error."""


class RunTestCase(msgspec.Struct, kw_only=True):
    """A case to send to the agent, with what will be graded."""

    test_case_id: str
    input: Any
    checks: list[dict[str, Any]] = msgspec.field(default_factory=list)
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: str = "SCORE"
    min_confidence: int = 70
    data_context: dict[str, Any] | None = None
    description: str | None = None


class CreatedRun(msgspec.Struct, kw_only=True):
    """A CI-mode run and its cases."""

    run_id: str
    status: str
    pass_threshold: float
    total: int = 0
    # The run's page in the web app; None when the server has no public URL.
    web_url: str | None = None
    gate: str = "threshold"
    baseline_run_id: str | None = None
    test_cases: list[RunTestCase] = msgspec.field(default_factory=list)


class ToolCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A tool call the agent made."""

    name: str
    arguments: Any = None


class ResultToPost(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the agent did on one case. Leave a field UNSET when it was not reported."""

    test_case_id: str
    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    agent_error: str | None = None


class CheckResult(msgspec.Struct, kw_only=True):
    """One check's outcome."""

    id: str
    type: str
    severity: str
    status: str
    passed: bool | None
    detail: str
    score: float | None = None
    reasoning: str | None = None


class CaseResult(msgspec.Struct, kw_only=True):
    """One case's grade."""

    test_case_id: str
    trial: int = 1
    graded: bool
    pass_fail: bool
    score: float | None
    partially_graded: bool
    judge_reasoning: str
    check_results: list[CheckResult] = msgspec.field(default_factory=list)
    ungraded_items: list[dict[str, Any]] = msgspec.field(default_factory=list)


class Counts(msgspec.Struct, kw_only=True):
    """A run's progress."""

    total: int
    done: int
    graded: int
    passed: int
    failed: int
    not_graded: int
    errored: int = 0


class JudgeUsage(msgspec.Struct, kw_only=True):
    """What the AI judge did for a run, and what it cost."""

    calls: int = 0
    cached: int = 0
    pending: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    stopped: str | None = None


class RunGate(msgspec.Struct, kw_only=True):
    """What every answer about a run says: its status, counts and CI gate."""

    run_id: str
    status: str
    pass_rate: float | None
    pass_threshold: float
    ci_pass: bool
    ci_fail_reason: str | None
    counts: Counts
    judge: JudgeUsage = msgspec.field(default_factory=JudgeUsage)
    # The run's page in the web app; None when the server has no public URL.
    web_url: str | None = None
    gate: str = "threshold"
    # The run compared with, and how many cases that passed there fail now (once complete).
    baseline_run_id: str | None = None
    new_failures: int | None = None


class ResultsAnswer(RunGate, kw_only=True):
    """The run's gate after a batch, and the batch's grades."""

    results: list[CaseResult] = msgspec.field(default_factory=list)


class Run(RunGate, kw_only=True):
    """A run's status and gate."""

    mode: str = "ci"
    dataset_id: str | None = None


class TestCase(msgspec.Struct, kw_only=True):
    """A test case (the fields a CI report uses)."""

    __test__ = False

    id: str
    input: Any
    description: str | None = None


class ResultPage(msgspec.Struct, kw_only=True):
    """A page of stored results."""

    items: list[CaseResult]
    next_cursor: str | None


class TestCasePage(msgspec.Struct, kw_only=True):
    """A page of a dataset's test cases."""

    __test__ = False

    items: list[TestCase]
    next_cursor: str | None


class BucketCounts(msgspec.Struct, kw_only=True):
    """How many cases of a comparison fall in each bucket."""

    new_failure: int = 0
    fixed: int = 0
    still_failing: int = 0
    still_passing: int = 0
    new_case: int = 0
    removed_case: int = 0
    flaky: int = 0


class ComparisonItem(msgspec.Struct, kw_only=True):
    """One case in both runs: its bucket, the checks whose verdict changed, and both results
    (None on the side that has none)."""

    test_case_id: str
    bucket: str
    changed_checks: list[str] = msgspec.field(default_factory=list)
    revision_changed: bool = False
    current: CaseResult | None = None
    baseline: CaseResult | None = None


class Comparison(msgspec.Struct, kw_only=True):
    """A run compared with its baseline: the bucket counts and a page of cases."""

    run_id: str
    baseline_run_id: str | None
    counts: BucketCounts
    items: list[ComparisonItem]
    next_cursor: str | None


def case_card_url(run_web_url: str, test_case_id: str, trial: int = 1) -> str:
    """The web app's card of one case result, from its run's `web_url`."""
    card = f"{run_web_url}/cases/{urllib.parse.quote(test_case_id, safe='')}"
    return card if trial == 1 else f"{card}?trial={trial}"


class AgentLassoClient:
    """The API over HTTP; use it as an async context manager."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 120) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/api/v1",
            headers={"x-api-key": api_key},
            timeout=timeout_s,
        )

    async def __aenter__(self) -> AgentLassoClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._http.aclose()

    async def create_run(
        self, dataset_id: str, *, pass_threshold: float | None = None, gate: str | None = None,
        baseline_run_id: str | None = None, idempotency_key: str | None = None,
    ) -> CreatedRun:  # fmt: skip
        """Start a CI-mode run of a dataset; without baseline_run_id the server picks one."""
        body: dict[str, Any] = {"dataset_id": dataset_id}
        for name, value in (("pass_threshold", pass_threshold), ("gate", gate),
                            ("baseline_run_id", baseline_run_id)):  # fmt: skip
            if value is not None:
                body[name] = value
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return await self._request("POST", "/eval-runs", CreatedRun, json=body, headers=headers)

    async def post_results(self, run_id: str, results: list[ResultToPost]) -> ResultsAnswer:
        """Post a batch of results; the answer is graded (status `grading` and no results when
        the server answered 202: the AI judge is still judging; follow the run)."""
        body = msgspec.json.encode({"run_id": run_id, "results": results})
        headers = {"content-type": "application/json"}
        return await self._request(
            "POST", "/eval-run-results", ResultsAnswer, content=body, headers=headers
        )

    async def start_server_run(
        self, dataset_id: str, agent_id: str, *, pass_threshold: float | None = None,
        trials: int = 1, concurrency: int | None = None, labels: dict[str, str] | None = None,
        gate: str | None = None, baseline_run_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Run:  # fmt: skip
        """Start a run in which the platform calls the registered agent (server mode)."""
        body: dict[str, Any] = {"dataset_id": dataset_id, "agent_id": agent_id, "trials": trials}
        for name, value in (("pass_threshold", pass_threshold), ("concurrency", concurrency),
                            ("labels", labels), ("gate", gate),
                            ("baseline_run_id", baseline_run_id)):  # fmt: skip
            if value is not None:
                body[name] = value
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return await self._request("POST", "/eval-runs", Run, json=body, headers=headers)

    async def get_run(self, run_id: str, *, wait_s: float | None = None) -> Run:
        """A run's status and gate; with wait_s, as soon as it ends or after wait_s seconds."""
        params = {"wait_s": wait_s} if wait_s else {}
        return await self._request("GET", f"/eval-runs/{run_id}", Run, params=params)

    async def compare(
        self, run_id: str, *, baseline: str | None = None, bucket: str | None = None,
        cursor: str | None = None, limit: int = 50,
    ) -> Comparison:  # fmt: skip
        """A page of the run compared with its baseline (or `baseline`), new failures first,
        or of one bucket; both runs must have ended. At most MAX_COMPARED_PER_PAGE a page."""
        given = {"baseline": baseline, "bucket": bucket, "cursor": cursor}
        params: dict[str, Any] = {name: value for name, value in given.items() if value}
        params["limit"] = limit
        return await self._request("GET", f"/eval-runs/{run_id}/compare", Comparison, params=params)

    async def get_test_case(self, test_case_id: str) -> TestCase:
        """A test case at its current revision."""
        return await self._request("GET", f"/test-cases/{test_case_id}", TestCase)

    async def results(
        self, run_id: str, *, outcome: str | None = None
    ) -> AsyncIterator[CaseResult]:
        """Every stored result of the run (optionally one outcome), page by page."""
        params = {"outcome": outcome} if outcome else {}
        async for page in self._pages(f"/eval-runs/{run_id}/results", ResultPage, params):
            for item in page.items:
                yield item

    async def test_cases(self, dataset_id: str) -> AsyncIterator[TestCase]:
        """Every test case of a dataset at its current revision, page by page."""
        async for page in self._pages(f"/datasets/{dataset_id}/test-cases", TestCasePage, {}):
            for item in page.items:
                yield item

    async def _pages(
        self, path: str, shape: type[PageT], params: dict[str, Any]
    ) -> AsyncIterator[PageT]:
        """Each page of a list, following next_cursor to the end."""
        cursor: str | None = None
        while True:
            query = {**params, "limit": 1000, **({"cursor": cursor} if cursor else {})}
            page = await self._request("GET", path, shape, params=query)
            yield page
            cursor = page.next_cursor
            if cursor is None:
                return

    async def _request(self, method: str, path: str, shape: type[T], **kwargs: Any) -> T:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise PlatformUnavailable(f"{method} {path}: {exc!r}") from exc
        if response.status_code >= 500:
            raise PlatformUnavailable(f"{method} {path}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise _client_error(response)
        return msgspec.json.decode(response.content, type=shape)


def _client_error(response: httpx.Response) -> ClientError:
    try:
        problem = response.json()
        return ClientError(response.status_code, problem.get("detail", ""), problem.get("errors"))
    except ValueError:
        return ClientError(response.status_code, response.text[:200])
