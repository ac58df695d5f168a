"""Compare in the web app: a run against its baseline as a person reads it, against a real
`agentlasso api` process (CI-mode runs posted through the API, the agent's replies changing
between them), and the Start a run form's Gate and Baseline."""

from __future__ import annotations

import re
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from agentlasso.web.compare_pages import PAGE_SIZE
from tests.support.api import create_dataset, register_agent
from tests.support.databases import new_project_key
from tests.support.web import hidden_field, path_of, shown_text

SAYS_DELAY = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}
GOOD = "Your refund arrives in 3-5 business days."
BAD = "Your refund arrives soon."
FILLERS = [f"filler {n:02}" for n in range(PAGE_SIZE)]


@pytest.fixture(scope="module")
def base_url(api_process_url: str) -> str:
    """The web app as `agentlasso api` serves it, in a process of its own."""
    return api_process_url


async def dataset_with(client: httpx.AsyncClient, descriptions: list[str]) -> dict[str, Any]:
    """A dataset whose cases (input "refund <description>") each check for the delay."""
    dataset = await create_dataset(client, name="Compared")
    cases = [{"input": f"refund {name}", "description": name, "checks": [SAYS_DELAY]}
             for name in descriptions]  # fmt: skip
    lines = b"".join(msgspec.json.encode(case) + b"\n" for case in cases)
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines, headers={"content-type": "application/x-ndjson"},
    )  # fmt: skip
    assert imported.status_code == 201, imported.text
    return dataset


async def ci_run(
    client: httpx.AsyncClient, dataset_id: str, replies: dict[str, tuple[str, list[str]]]
) -> dict[str, Any]:
    """A CI-mode run whose cases (by description) get these replies and tool calls."""
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    assert created.status_code == 201, created.text
    run: dict[str, Any] = created.json()
    by_input = {case["input"]: case["test_case_id"] for case in run["test_cases"]}
    results = [
        {
            "test_case_id": by_input[f"refund {name}"],
            "actual_output": reply,
            "actual_tool_calls": [{"name": tool, "arguments": {}} for tool in tools],
        }
        for name, (reply, tools) in replies.items()
    ]
    posted = await client.post(
        "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
    )
    assert posted.status_code == 200, posted.text
    return {**run, "ids": {name[len("refund ") :]: id_ for name, id_ in by_input.items()}}


@pytest_asyncio.fixture
async def two_runs(client: httpx.AsyncClient) -> dict[str, Any]:
    """A baseline where "broken" and the fillers pass and "mended" fails; then a run where
    "broken" fails (another reply, another tool) and "mended" passes."""
    dataset = await dataset_with(client, ["broken", "mended", *FILLERS])
    fine = {name: (GOOD, ["lookup"]) for name in FILLERS}
    first = await ci_run(client, dataset["id"], {
        "broken": (GOOD, ["lookup", "refund"]), "mended": (BAD, []), **fine,
    })  # fmt: skip
    second = await ci_run(client, dataset["id"], {
        "broken": (BAD, ["lookup", "cancel"]), "mended": (GOOD, []), **fine,
    })  # fmt: skip
    assert second["baseline_run_id"] == first["run_id"]
    return {"dataset_id": dataset["id"], "first": first["run_id"], "second": second["run_id"],
            "ids": second["ids"]}  # fmt: skip


def case_titles(page: str) -> list[str]:
    """The compared cases' titles, in the order the page lists them."""
    return [title.strip() for title in re.findall(r'<h3 id="case-\d+">([^<]*)</h3>', page)]


async def test_compare_shows_the_buckets_and_the_new_failure_first_with_both_replies(
    web: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    answer = await web.get(f"/runs/{two_runs['second']}/compare")
    assert answer.status_code == 200
    shown = shown_text(answer.text)
    for counted in ("All cases (22)", "New failures (1)", "Fixed (1)",
                    f"Still passing ({PAGE_SIZE})", "Still failing (0)", "Flaky (0)"):  # fmt: skip
        assert counted in shown, counted
    titles = case_titles(answer.text)
    assert titles[:2] == ["broken", "mended"], "the new failure first, then the fixed case"
    broken = answer.text.split('<h3 id="case-1">')[1].split('<h3 id="case-2">')[0]
    broken_shown = shown_text(broken)
    assert "new failure : in the baseline passed , in this run failed" in broken_shown
    assert f"/runs/{two_runs['second']}/cases/{two_runs['ids']['broken']}" in broken
    assert f"/runs/{two_runs['first']}/cases/{two_runs['ids']['broken']}" in broken
    assert GOOD in broken_shown and BAD in broken_shown, "both replies"
    assert (
        "Your refund arrives [removed: in 3-5 business days. ] [added: soon. ]" in broken_shown
    ), "the baseline's reply diffed against this run's"
    assert "lookup lookup same refund removed cancel added" in broken_shown, "tool calls aligned"
    assert "Output must contain delay changed passed" in broken_shown
    assert "the case was edited between the runs" not in broken_shown


async def test_a_bucket_filters_the_list_and_the_cases_page_on(
    web: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    compare = f"/runs/{two_runs['second']}/compare"
    fixed = await web.get(compare, params={"bucket": "fixed"})
    assert case_titles(fixed.text) == ["mended"]
    assert 'aria-current="page">Fixed (1)' in fixed.text

    first = await web.get(compare)
    assert len(case_titles(first.text)) == PAGE_SIZE
    more = re.search(r'href="([^"]*cursor=[^"]*)">More cases</a>', first.text)
    assert more, "a link to the next page"
    second = await web.get(more.group(1).replace("&amp;", "&"))
    assert second.status_code == 200
    seen = case_titles(first.text) + case_titles(second.text)
    assert sorted(seen) == sorted(["broken", "mended", *FILLERS]), "every case once"
    assert "More cases" not in second.text
    bad_cursor = await web.get(compare, params={"cursor": "9.x"})
    assert bad_cursor.status_code == 422


async def test_a_run_that_goes_on_can_be_compared_when_it_ends(
    web: httpx.AsyncClient, client: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": two_runs["dataset_id"]})
    going_on = created.json()["run_id"]
    page = await web.get(f"/runs/{going_on}/compare")
    assert page.status_code == 409
    assert "available when the run and its baseline have ended" in shown_text(page.text)
    assert ">Compare</button>" not in (await web.get(f"/runs/{going_on}")).text


async def test_the_run_page_names_its_gate_and_baseline_and_leads_to_compare(
    web: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    second = await web.get(f"/runs/{two_runs['second']}")
    shown = shown_text(second.text)
    assert ">Compare</button>" in second.text
    assert f'action="/runs/{two_runs["second"]}/compare"' in second.text
    assert f'<a href="/runs/{two_runs["first"]}">' in second.text, "the baseline's page"
    assert "(the pass rate reaches the threshold)" in shown
    assert "New failures 1 case that passed in the baseline fails now" in shown
    first = shown_text((await web.get(f"/runs/{two_runs['first']}")).text)
    assert "Baseline none" in first


async def test_another_projects_comparison_is_not_found(
    web: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as theirs:
        dataset = await dataset_with(theirs, ["secret"])
        run = await ci_run(theirs, dataset["id"], {"secret": (GOOD, [])})
    answer = await web.get(f"/runs/{run['run_id']}/compare")
    assert answer.status_code == 404
    assert "secret" not in shown_text(answer.text)


async def test_the_start_form_starts_a_run_with_the_gate_and_baseline_chosen(
    web: httpx.AsyncClient, client: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    await register_agent(client, "http://127.0.0.1:9/agent")
    dataset_id = two_runs["dataset_id"]
    form = (await web.get(f"/datasets/{dataset_id}/run")).text
    assert '<label for="gate">Gate</label>' in form
    assert '<label for="baseline_run_id">Baseline</label>' in form
    assert "Automatic: newest completed run whose gate passed" in form
    options = re.findall(r'<option value="([^"]*)"', form.split('id="baseline_run_id"')[1])
    assert options[:3] == ["", two_runs["second"], two_runs["first"]], "newest first"
    sent = {name: hidden_field(form, name) for name in ("csrf_token", "form_id")}
    answer = await web.post(
        f"/datasets/{dataset_id}/run",
        data={**sent, "gate": "no_new_failures", "baseline_run_id": two_runs["first"]},
    )
    assert answer.status_code == 303, answer.text
    run_id = path_of(answer).removeprefix("/runs/")
    run = (await client.get(f"/api/v1/eval-runs/{run_id}")).json()
    assert (run["gate"], run["baseline_run_id"]) == ("no_new_failures", two_runs["first"])
    await client.post(f"/api/v1/eval-runs/{run_id}/cancel")

    other = await create_dataset(client, name="Elsewhere")
    wrong = await web.post(
        f"/datasets/{other['id']}/run",
        data={**sent, "form_id": "another", "gate": "sometimes",
              "baseline_run_id": two_runs["first"]},
    )  # fmt: skip
    assert wrong.status_code == 422
    assert "Choose one of the gates." in shown_text(wrong.text)
    refused = await web.post(
        f"/datasets/{other['id']}/run",
        data={**sent, "form_id": "again", "baseline_run_id": two_runs["first"]},
    )
    assert refused.status_code == 422
    assert 'aria-describedby="baseline_run_id-error"' in refused.text
    assert "The baseline must be a completed run of the same dataset" in shown_text(refused.text)


async def test_the_dataset_page_leads_to_the_cases_that_flip_between_runs(
    web: httpx.AsyncClient, two_runs: dict[str, Any]
) -> None:
    dataset_page = (await web.get(f"/datasets/{two_runs['dataset_id']}")).text
    assert f'hx-get="/datasets/{two_runs["dataset_id"]}/flaky"' in dataset_page
    assert "Flaky cases" in shown_text(dataset_page)
    flaky = await web.get(f"/datasets/{two_runs['dataset_id']}/flaky")
    assert flaky.status_code == 200
    rows = re.findall(r'<a href="/cases/([0-9a-f-]{36})">([^<]*)</a>', flaky.text)
    assert sorted(title for _, title in rows) == ["broken", "mended"]
    assert {case for case, _ in rows} == {two_runs["ids"]["broken"], two_runs["ids"]["mended"]}
    assert "broken refund broken 2 1 1 50.0%" in shown_text(flaky.text)
