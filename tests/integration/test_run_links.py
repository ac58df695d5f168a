"""Links from a run's answers and CI output to the web app. With AGENTLASSO_PUBLIC_URL set, the
run answers carry `web_url`, and `agentlasso ci` and `agentlasso run` print the run's page and
each failing case's card and put them in the JUnit file and the step summary; without it they
print no link. Real `agentlasso api` processes, the real CLI, a fake agent on loopback."""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ElementTree
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agentlasso.config import Settings
from tests.support.api import CHECKS, create_dataset, register_agent, start_run
from tests.support.fake_agent import FakeAgentServer, running_fake_agent
from tests.support.processes import (
    ROOT,
    WorkerProcesses,
    agentlasso,
    agentlasso_awaited,
    api_process,
    free_port,
    run_id_printed,
)
from tests.support.web import browser, shown_text, signed_in_csrf

# Where people would open the web app: behind a proxy, under a path prefix.
PUBLIC_URL = "https://lasso.example.com/team-a"
START_TIMEOUT_S = 60


def process_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment of an `agentlasso api` process on the test database and queue."""
    return {
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "AGENTLASSO_QUEUE": settings.queue_name,
        **extra,
    }


@pytest.fixture(scope="module")
def linked_api_url(settings: Settings) -> Iterator[str]:
    """`agentlasso api` with a public URL (given with a trailing slash, which is dropped)."""
    env = process_env(settings, AGENTLASSO_PUBLIC_URL=f"{PUBLIC_URL}/")
    with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
        yield url


@pytest.fixture
def fake_agent() -> Iterator[FakeAgentServer]:
    with running_fake_agent() as server:
        yield server


@pytest_asyncio.fixture
async def linked(linked_api_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API client of a fresh project, on the server with a public URL."""
    headers = {"x-api-key": api_key}
    async with httpx.AsyncClient(base_url=linked_api_url, headers=headers, timeout=60) as http:
        yield http


@pytest_asyncio.fixture
async def unlinked(api_process_url: str, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """The API client of a fresh project, on the server without a public URL."""
    headers = {"x-api-key": api_key}
    async with httpx.AsyncClient(base_url=api_process_url, headers=headers, timeout=60) as http:
        yield http


async def described_cases(
    client: httpx.AsyncClient, inputs: list[str]
) -> tuple[str, dict[str, str]]:
    """A dataset with a case per input, described by its input, each with the refund CHECKS;
    its id, and each case's id by its input."""
    dataset = await create_dataset(client)
    ids: dict[str, str] = {}
    for text in inputs:
        created = await client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases",
            json={"input": text, "description": text, "checks": CHECKS},
        )
        assert created.status_code == 201, created.text
        ids[text] = created.json()["id"]
    return str(dataset["id"]), ids


async def run_command(
    client: httpx.AsyncClient, *args: str, summary: Path
) -> subprocess.CompletedProcess[str]:
    """`agentlasso <args>` against the client's server, as a CI job runs it."""
    return await agentlasso_awaited(
        str(client.base_url), client.headers["x-api-key"], *args,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip


def case_blocks(stdout: str) -> dict[str, list[str]]:
    """Each printed case that did not pass: its FAIL/SKIP line, and the lines under it."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(("FAIL ", "SKIP ")):
            current = blocks.setdefault(line, [])
        elif line.startswith("    "):
            current.append(line)
        else:
            current = []
    return blocks


def block_of(blocks: dict[str, list[str]], description: str) -> list[str]:
    """The lines under the one case whose title names this description."""
    found = [lines for title, lines in blocks.items() if f"({description})" in title]
    assert len(found) == 1, blocks
    return found[0]


def junit_suite(path: Path) -> ElementTree.Element:
    suite = ElementTree.parse(path).getroot().find("testsuite")
    assert suite is not None
    return suite


async def test_ci_links_the_run_page_and_each_failing_cases_card(
    linked: httpx.AsyncClient, api_key: str, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    dataset, ids = await described_cases(linked, ["refund ok", "promise things", "crash now"])
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = await run_command(
        linked, "ci", "--dataset", dataset, "--agent-url", fake_agent.url, "--junit", str(junit),
        summary=summary,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    run_id = run_id_printed(done.stdout)
    run_url = f"{PUBLIC_URL}/runs/{run_id}"
    cards = {text: f"{run_url}/cases/{case_id}" for text, case_id in ids.items()}

    lines = done.stdout.splitlines()
    assert lines[1] == f"Run page: {run_url}", "printed as the run starts, to watch it live"
    assert lines[-1] == f"Run page: {run_url}", "and under the gate"
    blocks = case_blocks(done.stdout)
    assert len(blocks) == 2
    for failing in ("promise things", "crash now"):
        assert block_of(blocks, failing)[-1] == f"    Case card: {cards[failing]}"
    assert done.stdout.count("Case card:") == 2, "a passing case is not listed"

    suite = junit_suite(junit)
    properties = [(p.get("name"), p.get("value")) for p in suite.findall("properties/property")]
    assert properties == [("url", run_url)]
    testcases = {case.get("name"): case for case in suite.findall("testcase")}
    for text, case_id in ids.items():
        assert testcases[f"{text} [{case_id}]"].findtext("system-out") == cards[text]
    promise = testcases[f"promise things [{ids['promise things']}]"]
    failure_text = promise.findtext("failure") or ""
    assert "stripe.refund was never called" in failure_text
    assert failure_text.splitlines()[-1] == f"Case card: {cards['promise things']}"

    markdown = summary.read_text()
    assert "## AgentLasso: failed" in markdown
    assert f"[Open the run in AgentLasso]({run_url})" in markdown
    assert f"| [promise things]({cards['promise things']}) | FAIL |" in markdown
    assert f"| [crash now]({cards['crash now']}) | FAIL |" in markdown

    # The links lead to the run's page and the case's card (the proxy drops the prefix).
    async with browser(str(linked.base_url)) as web:
        await signed_in_csrf(web, api_key)
        page = await web.get(run_url.removeprefix(PUBLIC_URL))
        assert page.status_code == 200
        card = await web.get(cards["promise things"].removeprefix(PUBLIC_URL))
        assert card.status_code == 200
        assert "promise things" in shown_text(card.text)


async def test_run_links_each_trials_card(
    linked: httpx.AsyncClient, fake_agent: FakeAgentServer, workers: WorkerProcesses,
    tmp_path: Path,
) -> None:  # fmt: skip
    workers.start()
    agent_id = await register_agent(linked, fake_agent.url)
    dataset, ids = await described_cases(linked, ["refund 1", "promise 2"])
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = await run_command(
        linked, "run", "--dataset", dataset, "--agent", agent_id, "--wait", "--trials", "2",
        "--junit", str(junit), summary=summary,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    run_url = f"{PUBLIC_URL}/runs/{run_id_printed(done.stdout)}"
    card = f"{run_url}/cases/{ids['promise 2']}"
    assert done.stdout.splitlines()[1] == f"Run page: {run_url}"
    assert done.stdout.splitlines()[-1] == f"Run page: {run_url}"
    blocks = case_blocks(done.stdout)
    assert block_of(blocks, "promise 2")[-1] == f"    Case card: {card}"
    assert block_of(blocks, "promise 2, trial 2")[-1] == f"    Case card: {card}?trial=2"

    testcases = {case.get("name"): case for case in junit_suite(junit).findall("testcase")}
    trial_2 = testcases[f"promise 2, trial 2 [{ids['promise 2']}]"]
    assert trial_2.findtext("system-out") == f"{card}?trial=2"
    assert f"| [promise 2, trial 2]({card}?trial=2) | FAIL |" in summary.read_text()


async def test_without_a_public_url_nothing_links(
    unlinked: httpx.AsyncClient, fake_agent: FakeAgentServer, tmp_path: Path
) -> None:
    dataset, ids = await described_cases(unlinked, ["refund ok", "promise things"])
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = await run_command(
        unlinked, "ci", "--dataset", dataset, "--agent-url", fake_agent.url,
        "--junit", str(junit), summary=summary,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Run page:" not in done.stdout and "Case card:" not in done.stdout
    assert done.stdout.splitlines()[-1].startswith("CI gate: FAIL: ")

    suite = junit_suite(junit)
    assert suite.find("properties") is None
    assert suite.findall("testcase/system-out") == []
    promise = suite.find(f"testcase[@name='promise things [{ids['promise things']}]']")
    assert promise is not None
    failure_text = promise.findtext("failure") or ""
    assert "stripe.refund was never called" in failure_text and "Case card" not in failure_text

    markdown = summary.read_text()
    assert "| promise things | FAIL |" in markdown
    assert "](" not in markdown, "no Markdown link"


async def run_answers(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """What the API answers about one CI-mode run: created, a batch posted, read, listed."""
    dataset, ids = await described_cases(client, ["refund ok"])
    created = await start_run(client, dataset_id=dataset)
    reply = {"actual_output": "Back in 3-5 business days.",
             "actual_tool_calls": [{"name": "stripe.refund"}]}  # fmt: skip
    body = {"run_id": created["run_id"], "results": [{"test_case_id": ids["refund ok"], **reply}]}
    posted = await client.post("/api/v1/eval-run-results", json=body)
    assert posted.status_code == 200, posted.text
    read = await client.get(f"/api/v1/eval-runs/{created['run_id']}")
    listed = await client.get("/api/v1/eval-runs", params={"dataset_id": dataset})
    return [created, posted.json(), read.json(), *listed.json()["items"]]


async def test_the_run_answers_carry_the_run_pages_url(linked: httpx.AsyncClient) -> None:
    answers = await run_answers(linked)
    run_url = f"{PUBLIC_URL}/runs/{answers[0]['run_id']}"
    assert [answer["web_url"] for answer in answers] == [run_url] * 4


async def test_without_a_public_url_the_run_answers_say_null(unlinked: httpx.AsyncClient) -> None:
    answers = await run_answers(unlinked)
    assert [answer["web_url"] for answer in answers] == [None] * 4


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("lasso.example.com", "AGENTLASSO_PUBLIC_URL must be an http or https address"),
        ("ftp://lasso.example.com", "AGENTLASSO_PUBLIC_URL must be an http or https address"),
        ("https://lasso.example.com/?team=a", "AGENTLASSO_PUBLIC_URL must be an address without"),
        (
            "https://ci:hunter2@lasso.example.com",
            "AGENTLASSO_PUBLIC_URL must not carry a user name or password",
        ),
    ],
)
def test_a_malformed_public_url_is_refused_at_start(
    settings: Settings, value: str, said: str
) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        **process_env(settings, AGENTLASSO_PUBLIC_URL=value),
    }
    argv = agentlasso("api", "--port", str(free_port()), "--log-level", "warning")
    done = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S
    )
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert "hunter2" not in done.stderr + done.stdout, "a password is never echoed"
