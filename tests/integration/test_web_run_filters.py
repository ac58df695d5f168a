"""A run's results and the runs list, filtered as a person filters them, against a real
`agentlasso api` process (CI-mode runs posted through the API)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from tests.support.api import create_dataset, start_run
from tests.support.web import shown_text

CONTAINS_DELAY = {"type": "output_contains", "value": "3-5 business days", "severity": "critical"}
NO_CANCEL = {"type": "tool_not_called", "tool": "orders.cancel", "severity": "critical"}
SAYS_SORRY_MINOR = {"type": "output_contains", "value": "sorry", "severity": "minor"}
A_CANCEL = [{"name": "orders.cancel", "arguments": {"order": 1}}]


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


async def ci_run(
    client: httpx.AsyncClient, name: str, cases: list[tuple[str, list[Any], str, list[Any]]]
) -> dict[str, Any]:
    """A finished CI-mode run: each case is (input, checks, the reply, its tool calls); the run
    and its case ids by input."""
    dataset = await create_dataset(client, name=name)
    lines = b"".join(
        msgspec.json.encode({"input": text, "description": None, "checks": checks}) + b"\n"
        for text, checks, _, _ in cases
    )
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines, headers={"content-type": "application/x-ndjson"},
    )  # fmt: skip
    assert imported.status_code == 201, imported.text
    run = await start_run(client, dataset_id=dataset["id"])
    ids = {case["input"]: case["test_case_id"] for case in run["test_cases"]}
    results = [
        {"test_case_id": ids[text], "actual_output": reply, "actual_tool_calls": calls}
        for text, _, reply, calls in cases
    ]
    posted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code == 200, posted.text
    return {"run_id": run["run_id"], "dataset_id": dataset["id"], "ids": ids}


def listed_inputs(page: str) -> list[str]:
    """The inputs of the results table's rows, in order."""
    rows = re.findall(r'<a href="/runs/[^/"]+/cases/[^"]+">([^<]*)</a>', page)
    return [re.sub(r"\s+", " ", row).strip() for row in rows]


@pytest_asyncio.fixture
async def mixed_run(client: httpx.AsyncClient) -> dict[str, Any]:
    """Two failures of different kinds, one case that passes, and one that passes graded in part
    only (this server has no AI judge: its minor judge check is not graded)."""
    return await ci_run(client, "Mixed", [
        ("order 11: where is my refund?", [CONTAINS_DELAY], "Soon.", []),
        ("order 22: cancel nothing", [NO_CANCEL, SAYS_SORRY_MINOR], "Done.", A_CANCEL),
        ("order 33: hello", [{"type": "output_contains", "value": "hello"}], "hello", []),
        ("order 44: judged", [{"type": "output_contains", "value": "ok"},
                              {"type": "llm_judge", "criterion": "Is polite",
                               "severity": "minor"}], "ok", []),
    ])  # fmt: skip


async def test_all_results_list_the_failures_first(
    web: httpx.AsyncClient, mixed_run: dict[str, Any]
) -> None:
    page = (await web.get(f"/runs/{mixed_run['run_id']}", params={"outcome": ""})).text
    inputs = listed_inputs(page)
    assert inputs[:2] == ["order 11: where is my refund?", "order 22: cancel nothing"]
    assert set(inputs[2:]) == {"order 33: hello", "order 44: judged"}


async def test_results_by_failed_check_type_and_severity(
    web: httpx.AsyncClient, mixed_run: dict[str, Any]
) -> None:
    run_page = f"/runs/{mixed_run['run_id']}"
    by_type = (await web.get(run_page, params={"check_type": "tool_not_called"})).text
    assert listed_inputs(by_type) == ["order 22: cancel nothing"]
    assert '<option value="tool_not_called" selected>' in by_type, "the choice stays shown"
    critical = (await web.get(run_page, params={"outcome": "", "severity": "critical"})).text
    assert listed_inputs(critical) == ["order 11: where is my refund?", "order 22: cancel nothing"]
    minor = (await web.get(run_page, params={"outcome": "", "severity": "minor"})).text
    assert listed_inputs(minor) == ["order 22: cancel nothing"]
    # Type and severity name one failed check: order 22's minor failure is not its tool check.
    both = await web.get(run_page, params={"check_type": "tool_not_called", "severity": "minor"})
    assert listed_inputs(both.text) == []
    assert "No failed results match." in shown_text(both.text)


async def test_results_partially_graded_and_searched_by_input(
    web: httpx.AsyncClient, mixed_run: dict[str, Any]
) -> None:
    run_page = f"/runs/{mixed_run['run_id']}"
    partial = (await web.get(run_page, params={"outcome": "", "partial": "yes"})).text
    assert listed_inputs(partial) == ["order 44: judged"]
    assert "(partially graded)" in shown_text(partial)
    found = (await web.get(run_page, params={"outcome": "", "q": "ORDER 33"})).text
    assert listed_inputs(found) == ["order 33: hello"]
    wildcard = (await web.get(run_page, params={"outcome": "", "q": "%"})).text
    assert listed_inputs(wildcard) == [], "% is a character searched for, not a wildcard"


async def test_pages_go_on_from_the_failures_into_the_passes(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    failing = [(f"fail {n:02}", [CONTAINS_DELAY], "no", []) for n in range(55)]
    passing = [(f"pass {n:02}", [CONTAINS_DELAY], "3-5 business days", []) for n in range(3)]
    run = await ci_run(client, "Paged", passing + failing)
    first = (await web.get(f"/runs/{run['run_id']}", params={"outcome": ""})).text
    assert listed_inputs(first) == [f"fail {n:02}" for n in range(50)]
    more = re.search(r'<a href="([^"]+)">More results</a>', first)
    assert more, "a link to the next page"
    second = (await web.get(more.group(1).replace("&amp;", "&"))).text
    assert listed_inputs(second) == [f"fail {n:02}" for n in range(50, 55)] + [
        f"pass {n:02}" for n in range(3)
    ]
    assert "More results" not in second


async def test_a_forged_cursor_is_a_clear_error(
    web: httpx.AsyncClient, mixed_run: dict[str, Any]
) -> None:
    answer = await web.get(f"/runs/{mixed_run['run_id']}", params={"cursor": "passed:x"})
    assert answer.status_code == 422
    assert "The cursor is not valid." in shown_text(answer.text)


async def test_the_runs_list_filters_by_dataset_status_and_gate(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    green = await ci_run(client, "Green", [("hi", [{"type": "output_contains", "value": "hi"}],
                                             "hi", [])])  # fmt: skip
    red = await ci_run(client, "Red", [("hi", [{"type": "output_contains", "value": "x"}],
                                        "hi", [])])  # fmt: skip
    waiting = await start_run(client, dataset_id=red["dataset_id"])

    def run_links(page: str) -> set[str]:
        return set(re.findall(r'<a href="/runs/([0-9a-f-]{36})">', page))

    passed = (await web.get("/runs", params={"gate": "passed"})).text
    assert green["run_id"] in run_links(passed) and red["run_id"] not in run_links(passed)
    failed = (await web.get("/runs", params={"gate": "failed"})).text
    assert red["run_id"] in run_links(failed) and green["run_id"] not in run_links(failed)
    of_red = (await web.get("/runs", params={"dataset": red["dataset_id"]})).text
    assert run_links(of_red) == {red["run_id"], waiting["run_id"]}
    awaiting = (await web.get("/runs", params={"status": "awaiting_results"})).text
    assert waiting["run_id"] in run_links(awaiting) and red["run_id"] not in run_links(awaiting)
    none = await web.get("/runs", params={"dataset": green["dataset_id"], "gate": "failed"})
    assert "No runs match." in shown_text(none.text)
