"""A small typed client for the AgentLasso API, for CI scripts (and `agentlasso ci`).

    async with AgentLassoClient("http://127.0.0.1:8000", api_key) as client:
        run = await client.create_run(dataset_id, pass_threshold=1.0)
        answer = await client.post_results(run.run_id, [ResultToPost(test_case_id=..., ...)])
        sys.exit(0 if answer.ci_pass else 1)

Answers are decoded into the server's own shapes (agentlasso.schemas, declared once for the
API and this client); unknown fields are ignored, so a newer server's added fields do not break
an older client.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, TypeVar

import httpx
import msgspec

from agentlasso.domain.conversations import EndedBy
from agentlasso.retry_policy import retry_after_s
from agentlasso.schemas.comparisons import BucketCounts, ComparedCaseOut, ComparisonOut
from agentlasso.schemas.run_results import (
    GradedResult,
    NextUserTurn,
    PostedTurn,
    ResultPage,
    ResultsAnswer,
    StillJudging,
    StoredResult,
)
from agentlasso.schemas.runs import (
    Counts,
    CreatedCiRun,
    CreatedServerRun,
    JudgeUsage,
    Run,
    RunGate,
    RunTestCase,
)
from agentlasso.schemas.test_cases import TestCase, TestCasePage

__all__ = [
    "MAX_COMPARED_PER_PAGE",
    "MAX_RESULTS_PER_POST",
    "AgentLassoClient",
    "BucketCounts",
    "ClientError",
    "ComparedCaseOut",
    "ComparisonOut",
    "Counts",
    "CreatedCiRun",
    "CreatedServerRun",
    "GradedResult",
    "JudgeUsage",
    "NextUserTurn",
    "PlatformUnavailable",
    "PostedTurn",
    "ResultPage",
    "ResultToPost",
    "ResultsAnswer",
    "Run",
    "RunGate",
    "RunTestCase",
    "StillJudging",
    "StoredResult",
    "TestCase",
    "TestCasePage",
    "case_card_url",
    "trial_of",
    "with_results",
]

T = TypeVar("T")
# The most results one POST /eval-run-results may carry (the server's MAX_RESULTS_PER_POST).
MAX_RESULTS_PER_POST = 10_000
# The most compared cases one page of GET /eval-runs/{id}/compare holds (the server's
# MAX_COMPARED).
MAX_COMPARED_PER_PAGE = 200
PageT = TypeVar("PageT", ResultPage, TestCasePage)


class ClientError(Exception):
    """The API answered with an error (a problem+json body); `retry_after_s` is the wait its
    Retry-After asked for (a 429), None without one."""

    def __init__(
        self, status: int, detail: str, errors: list[dict[str, Any]] | None = None,
        retry_after_s: float | None = None,
    ) -> None:  # fmt: skip
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.errors = status, detail, errors or []
        self.retry_after_s = retry_after_s


class PlatformUnavailable(Exception):
    """The platform could not be reached (`status` None), or answered with a server error;
    `retry_after_s` is the wait its Retry-After asked for (a 503), None without one."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class ResultToPost(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the agent did on one case. Leave a field UNSET when it was not reported."""

    test_case_id: str
    actual_output: Any = msgspec.UNSET
    actual_tool_calls: Any = msgspec.UNSET
    agent_error: str | None = None
    # How long the call to the agent took (latency_below checks grade it).
    latency_ms: int | None = None
    # The trace id of the traceparent the call to the agent carried (contract section 14).
    agent_trace_id: str | None = None
    # A conversation case (instead of actual_output): each turn, and how it ended.
    turns: list[PostedTurn] | msgspec.UnsetType = msgspec.UNSET
    ended_by: EndedBy | msgspec.UnsetType = msgspec.UNSET


def trial_of(result: GradedResult) -> int:
    """The result's trial: a posted batch's grades are of a CI-mode run, which has one."""
    return result.trial if isinstance(result, StoredResult) else 1


def with_results(gate: RunGate, results: list[GradedResult]) -> ResultsAnswer:
    """The run's gate with these grades, as a batch's answer carries them."""
    fields = {name: getattr(gate, name) for name in RunGate.__struct_fields__}
    return ResultsAnswer(**fields, results=results)


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
        tags: list[str] | None = None, dataset_version: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> CreatedCiRun:  # fmt: skip
        """Start a CI-mode run of a dataset (only the cases with one of `tags`, when given; the
        revisions of `dataset_version`, an id or name, when given; `tools`, the agent's declared
        tools, for tool_args_valid checks); without baseline_run_id the server picks one."""
        body: dict[str, Any] = {"dataset_id": dataset_id}
        for name, value in (("pass_threshold", pass_threshold), ("gate", gate),
                            ("baseline_run_id", baseline_run_id), ("tags", tags),
                            ("dataset_version", dataset_version), ("tools", tools)):  # fmt: skip
            if value is not None:
                body[name] = value
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return await self._request("POST", "/eval-runs", CreatedCiRun, json=body, headers=headers)

    async def post_results(self, run_id: str, results: list[ResultToPost]) -> ResultsAnswer:
        """Post a batch of results; the answer is graded (status `grading` and no results when
        the server answered 202: the AI judge is still judging; follow the run)."""
        body = msgspec.json.encode({"run_id": run_id, "results": results})
        headers = {"content-type": "application/json"}
        response = await self._send("POST", "/eval-run-results", content=body, headers=headers)
        if response.status_code == 202:  # still judging: the run's gate, no grades yet
            return with_results(msgspec.json.decode(response.content, type=StillJudging), [])
        return msgspec.json.decode(response.content, type=ResultsAnswer)

    async def next_user_turn(
        self, run_id: str, test_case_id: str, trial: int, transcript: list[dict[str, Any]]
    ) -> NextUserTurn:
        """The simulated user's next message for a conversation, from its transcript so far."""
        body = {"test_case_id": test_case_id, "trial": trial, "transcript": transcript}
        return await self._request(
            "POST", f"/eval-runs/{run_id}/next-user-turn", NextUserTurn, json=body
        )

    async def start_server_run(
        self, dataset_id: str, agent_id: str, *, pass_threshold: float | None = None,
        trials: int = 1, concurrency: int | None = None, labels: dict[str, str] | None = None,
        gate: str | None = None, baseline_run_id: str | None = None,
        idempotency_key: str | None = None, tags: list[str] | None = None,
        dataset_version: str | None = None,
    ) -> Run:  # fmt: skip
        """Start a run in which the platform calls the registered agent (server mode); `tags`
        and `dataset_version` choose its cases as for create_run."""
        body: dict[str, Any] = {"dataset_id": dataset_id, "agent_id": agent_id, "trials": trials}
        for name, value in (("pass_threshold", pass_threshold), ("concurrency", concurrency),
                            ("labels", labels), ("gate", gate),
                            ("baseline_run_id", baseline_run_id), ("tags", tags),
                            ("dataset_version", dataset_version)):  # fmt: skip
            if value is not None:
                body[name] = value
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return await self._request(
            "POST", "/eval-runs", CreatedServerRun, json=body, headers=headers
        )

    async def get_run(self, run_id: str, *, wait_s: float | None = None) -> Run:
        """A run's status and gate; with wait_s, as soon as it ends or after wait_s seconds."""
        params = {"wait_s": wait_s} if wait_s else {}
        return await self._request("GET", f"/eval-runs/{run_id}", Run, params=params)

    async def compare(
        self, run_id: str, *, baseline: str | None = None, bucket: str | None = None,
        cursor: str | None = None, limit: int = 50,
    ) -> ComparisonOut:  # fmt: skip
        """A page of the run compared with its baseline (or `baseline`), new failures first,
        or of one bucket; both runs must have ended. At most MAX_COMPARED_PER_PAGE a page."""
        given = {"baseline": baseline, "bucket": bucket, "cursor": cursor}
        params: dict[str, Any] = {name: value for name, value in given.items() if value}
        params["limit"] = limit
        return await self._request(
            "GET", f"/eval-runs/{run_id}/compare", ComparisonOut, params=params
        )

    async def get_test_case(self, test_case_id: str) -> TestCase:
        """A test case at its current revision."""
        return await self._request("GET", f"/test-cases/{test_case_id}", TestCase)

    async def results(
        self, run_id: str, *, outcome: str | None = None
    ) -> AsyncIterator[StoredResult]:
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
        response = await self._send(method, path, **kwargs)
        return msgspec.json.decode(response.content, type=shape)

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The API's answer when it is a success; its error raised otherwise."""
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise PlatformUnavailable(f"{method} {path}: {exc!r}") from exc
        if response.status_code >= 500:
            raise PlatformUnavailable(
                f"{method} {path}: HTTP {response.status_code}",
                status=response.status_code,
                retry_after_s=retry_after_s(response.headers.get("retry-after")),
            )
        if response.status_code >= 400:
            raise _client_error(response)
        return response


def _client_error(response: httpx.Response) -> ClientError:
    wait_s = retry_after_s(response.headers.get("retry-after"))
    try:
        problem = response.json()
        detail, errors = problem.get("detail", ""), problem.get("errors")
    except ValueError:
        detail, errors = response.text[:200], None
    return ClientError(response.status_code, detail, errors, retry_after_s=wait_s)
