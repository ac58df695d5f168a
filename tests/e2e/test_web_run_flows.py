"""Server-mode runs started from the web app, against real worker processes and a fake agent:
the Start a run form, the run's page following the run live, Re-run failed and Run again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx

from tests.support.api import dataset_of, register_agent, run_now, wait_final
from tests.support.databases import new_project_key
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses
from tests.support.runs import ci_run_with_one_failure
from tests.support.web import hidden_field, path_of, shown_text


async def start_from_form(web: httpx.AsyncClient, dataset_id: str, **fields: str) -> httpx.Response:
    """Open the dataset's Start a run form, fill it in, send it; the answer."""
    form = (await web.get(f"/datasets/{dataset_id}/run")).text
    sent = {name: hidden_field(form, name) for name in ("csrf_token", "form_id")}
    return await web.post(f"/datasets/{dataset_id}/run", data={**sent, **fields})


async def press(web: httpx.AsyncClient, run_id: str, button: str) -> str:
    """Press Re-run failed or Run again on the run's page; the id of the run it opens."""
    page = (await web.get(f"/runs/{run_id}")).text
    which = {"Re-run failed": "failed", "Run again": "all"}[button]
    assert f">{button}</button>" in page, f"no {button} button"
    form_id = hidden_field(page.split(f'value="{which}"')[0].rsplit("<form", 1)[1], "form_id")
    answer = await web.post(
        f"/runs/{run_id}/rerun",
        data={"csrf_token": hidden_field(page, "csrf_token"), "form_id": form_id, "which": which},
    )
    assert answer.status_code == 303, answer.text
    return path_of(answer).removeprefix("/runs/")


async def live_events(web: httpx.AsyncClient, run_id: str) -> AsyncIterator[tuple[str, str]]:
    """The run page's live stream, as (event, data) pairs."""
    async with web.stream(
        "GET", f"/runs/{run_id}/live", headers={"accept": "text/event-stream"}
    ) as answer:
        assert answer.status_code == 200
        event, data = "", []
        async for line in answer.aiter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                data.append(line.removeprefix("data:").removeprefix(" "))
            elif not line and event:
                yield event, "\n".join(data)
                event, data = "", []


async def test_a_run_started_from_the_form_runs_as_asked_and_its_page_follows_it(
    web: httpx.AsyncClient,
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "promise 2", "refund 3"])
    answer = await start_from_form(
        web, dataset_id, trials="2", concurrency="3", threshold="50", labels="branch: main"
    )
    assert answer.status_code == 303
    run_id = path_of(answer).removeprefix("/runs/")
    run = await run_now(client, run_id)
    assert (run["trials"], run["concurrency"], run["pass_threshold"]) == (2, 3, 0.5)
    assert run["labels"] == {"branch": "main"} and run["counts"]["total"] == 6
    page = shown_text((await web.get(f"/runs/{run_id}")).text)
    assert "Cases done" in page and "Cancel" in page, "a run not yet started shows its progress"

    workers.start()
    events = [event async for event in live_events(web, run_id)]
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "progress" and kinds[-1] == "final" and kinds.count("final") == 1
    final = shown_text(events[-1][1])
    assert "completed" in final and "6 of 6 in: 4 passed, 2 failed" in final
    assert "66.7% against a threshold of 50.0%" in final
    done = shown_text((await web.get(f"/runs/{run_id}")).text)
    assert "gate passed" in done and "Re-run failed" in done and "Run again" in done
    assert "Cancel" not in done


async def test_re_run_failed_grades_only_the_failures_at_their_current_revision(
    web: httpx.AsyncClient,
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    workers.start()
    await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "promise 2", "promise 3"])
    started = await start_from_form(web, dataset_id, gate="no_new_failures")
    first = path_of(started).removeprefix("/runs/")
    assert (await wait_final(client, first))["counts"]["failed"] == 2
    cases = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    fixed = next(case for case in cases if case["input"] == "promise 2")
    # The check was wrong, not the agent: it now asks for what the agent does say.
    checks = [{"type": "output_contains", "value": "guarantee"}]
    edited = await client.patch(f"/api/v1/test-cases/{fixed['id']}", json={"checks": checks})
    assert edited.status_code == 200, edited.text

    rerun = await press(web, first, "Re-run failed")
    final = await wait_final(client, rerun)
    assert final["counts"]["total"] == 2 and final["counts"]["passed"] == 1
    assert final["labels"] == {"rerun_of": first} and final["agent_id"] is not None
    assert final["gate"] == "no_new_failures", "the re-run keeps the run's gate"
    inputs = {request["input"] for request in fake_agent.requests if request["run_id"] == rerun}
    assert inputs == {"promise 2", "promise 3"}

    again = await press(web, rerun, "Run again")
    assert (await wait_final(client, again))["counts"]["total"] == 3


async def test_re_run_failed_of_a_ci_run_calls_the_projects_agent(
    web: httpx.AsyncClient,
    client: httpx.AsyncClient,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    workers.start()
    ci_run = await ci_run_with_one_failure(client)
    page = shown_text((await web.get(f"/runs/{ci_run['run_id']}")).text)
    assert "Re-run failed" not in page, "no agent registered: nothing to call"
    await register_agent(client, fake_agent.url)
    rerun = await press(web, ci_run["run_id"], "Re-run failed")
    final = await wait_final(client, rerun)
    assert final["mode"] == "server" and final["counts"]["total"] == 1


async def test_start_form_errors_are_named_by_field_and_start_nothing(
    web: httpx.AsyncClient, client: httpx.AsyncClient, fake_agent: FakeAgentServer
) -> None:
    await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1"])
    answer = await start_from_form(
        web, dataset_id, trials="11", concurrency="0", threshold="150", labels="no colon here"
    )
    assert answer.status_code == 422
    shown = shown_text(answer.text)
    assert "A whole number from 1 to 10." in shown
    assert "A whole number from 1 to 1,000,000." in shown
    assert "A percentage from 0 to 100." in shown
    assert "One label a line, as key: value" in shown
    assert (
        'id="trials"' in answer.text
        and 'aria-describedby="trials-hint trials-error"' in answer.text
    )
    assert (await client.get("/api/v1/eval-runs")).json()["items"] == []


async def test_another_projects_run_cannot_be_watched_or_run_again(
    web: httpx.AsyncClient, base_url: str, database_url: str
) -> None:
    headers = {"x-api-key": await new_project_key(database_url)}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as theirs:
        their_run = await ci_run_with_one_failure(theirs)
    csrf = hidden_field((await web.get("/runs")).text, "csrf_token")
    watch = await web.get(f"/runs/{their_run['run_id']}/live")
    assert watch.status_code == 404
    for which in ("failed", "all"):
        answer = await web.post(
            f"/runs/{their_run['run_id']}/rerun", data={"csrf_token": csrf, "which": which}
        )
        assert answer.status_code == 404


async def test_a_ci_runs_page_follows_its_batches_live(
    web: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    dataset_id = await dataset_of(client, ["refund 1", "refund 2"])
    created = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    run = created.json()
    reply = {"actual_output": "3-5 business days", "actual_tool_calls": [{"name": "stripe.refund"}]}
    seen: list[str] = []
    async for kind, data in live_events(web, run["run_id"]):
        seen.append(kind)
        shown = shown_text(data)
        if "0 of 2 in" in shown or "1 of 2 in" in shown:
            case = run["test_cases"][len(seen) - 1]
            posted = await client.post(
                "/api/v1/eval-run-results",
                json={"run_id": run["run_id"],
                      "results": [{"test_case_id": case["test_case_id"], **reply}]},
            )  # fmt: skip
            assert posted.status_code == 200, posted.text
    assert seen == ["progress", "progress", "final"]
    assert "2 of 2 in: 2 passed" in shown and "Gate passed" in shown


async def test_an_agent_not_in_the_project_is_named_on_the_form(
    web: httpx.AsyncClient, client: httpx.AsyncClient, fake_agent: FakeAgentServer
) -> None:
    await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1"])
    answer = await start_from_form(web, dataset_id, agent=str(uuid.uuid4()))
    assert answer.status_code == 422
    assert 'aria-describedby="agent-error"' in answer.text, "the error sits by the Agent field"
    assert "No agent with this id in your project." in shown_text(answer.text)
    assert (await client.get("/api/v1/eval-runs")).json()["items"] == []
