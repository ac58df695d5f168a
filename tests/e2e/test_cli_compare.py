"""`agentlasso ci` and `agentlasso run` compared with a baseline: `--gate no_new_failures`,
`--baseline RUN_ID|auto`, the bucket counts and new failures printed first, and the
`--comment-file` Markdown, read back through a real Markdown renderer. Real `agentlasso api`
processes, the real CLI, an `--agent-cmd` agent whose answers the test changes between runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from markdown_it import MarkdownIt

from agentlasso.config import Settings
from tests.support.api import dataset_of, register_agent, start_run, wait_final
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import (
    ROOT,
    WorkerProcesses,
    agentlasso,
    agentlasso_awaited,
    api_process,
    run_id_printed,
)

PUBLIC_URL = "https://lasso.example.com/team-a"
CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "output_contains", "value": "3-5 business days"},
    {"type": "output_not_contains", "value": "guarantee"},
]
# The agent: a good answer or a bad one per input, as the file beside it says.
AGENT = """\
import json, pathlib, sys
request = json.load(sys.stdin)
bad = json.loads(pathlib.Path(sys.argv[1]).read_text())
if request["input"] in bad:
    print(json.dumps({"output": "Refund coming, I guarantee it!", "tool_calls": []}))
else:
    print(json.dumps({"output": "Refunded: 3-5 business days.",
                      "tool_calls": [{"name": "stripe.refund", "arguments": {}}]}))
"""
# Passes in both runs, breaks in the second, fixed in the second, fails in both.
KEEPS, BREAKS, FIXED, STILL = "refund kept", "refund order 42, no description", "fixed", "still"


@pytest.fixture(scope="module")
def linked_api_url(settings: Settings) -> Iterator[str]:
    """`agentlasso api` that knows its public URL, so answers carry links to the web app."""
    env = {
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_PUBLIC_URL": PUBLIC_URL,
    }
    with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
        yield url


class Agent:
    """The `--agent-cmd` agent and the file that says which inputs it answers badly."""

    def __init__(self, folder: Path) -> None:
        self.script, self.bad_inputs = folder / "agent.py", folder / "bad.json"
        self.script.write_text(AGENT)

    def answer_badly(self, *inputs: str) -> None:
        self.bad_inputs.write_text(json.dumps(list(inputs)))

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.bad_inputs}"


def make_dataset(base_url: str, key: str) -> tuple[str, dict[str, str]]:
    """The four cases (one without a description); the dataset's id and each case's id."""
    ids: dict[str, str] = {}
    with httpx.Client(base_url=base_url, headers={"x-api-key": key}) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "compare"}).json()
        for text in (KEEPS, BREAKS, FIXED, STILL):
            described = {} if text == BREAKS else {"description": f"the {text} case"}
            body = {"input": text, "checks": CHECKS, **described}
            created = client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
            assert created.status_code == 201, created.text
            ids[text] = created.json()["id"]
    return str(dataset["id"]), ids


def cli(base_url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTLASSO_URL": base_url, "AGENTLASSO_API_KEY": key}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        agentlasso(*args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


async def cli_async(base_url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`cli`, without blocking the event loop the in-process API serves from."""
    return await agentlasso_awaited(base_url, key, *args)


def indented_under(lines: list[str], at: int) -> list[str]:
    """The indented lines under line `at`: a printed case's failed checks and card."""
    block: list[str] = []
    for line in lines[at + 1 :]:
        if not line.startswith("    "):
            return block
        block.append(line)
    return block


class Rendered(HTMLParser):
    """The table rows and the links of rendered Markdown."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.links: dict[str, str] = {}
        self._cell: list[str] | None = None
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a":
            self._href, self._text = dict(attrs).get("href"), ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "a" and self._href is not None:
            self.links[self._href] = self._text
            self._href = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._href is not None:
            self._text += data


def rendered(path: Path) -> Rendered:
    markdown = MarkdownIt("commonmark", {"html": True}).enable("table")
    page = Rendered()
    page.feed(markdown.render(path.read_text(encoding="utf-8")))
    return page


def test_a_new_failure_fails_the_gate_and_is_printed_and_commented_first(
    linked_api_url: str, api_key: str, tmp_path: Path
) -> None:
    agent = Agent(tmp_path)
    dataset, ids = make_dataset(linked_api_url, api_key)
    gate = ("ci", "--dataset", dataset, "--agent-cmd", agent.command, "--gate", "no_new_failures")

    agent.answer_badly(FIXED, STILL)
    first_comment = tmp_path / "first.md"
    first = cli(linked_api_url, api_key, *gate, "--comment-file", str(first_comment))
    assert first.returncode == 0, "two cases fail, but nothing can be new without a baseline"
    lines = first.stdout.splitlines()
    assert lines[2] == (
        "Gate: no new failures. No baseline run: nothing to compare with, no case is a new failure."
    )
    assert "Compared with" not in first.stdout
    first_page = rendered(first_comment)
    assert ["New cases", "4"] in first_page.rows
    assert "No baseline: every case is new." in first_comment.read_text()
    first_run = run_id_printed(first.stdout)

    agent.answer_badly(BREAKS, STILL)
    comment = tmp_path / "comment.md"
    second = cli(linked_api_url, api_key, *gate, "--comment-file", str(comment))
    assert second.returncode == 1, second.stdout + second.stderr
    run_id = run_id_printed(second.stdout)
    card = f"{PUBLIC_URL}/runs/{run_id}/cases/{ids[BREAKS]}"
    lines = second.stdout.splitlines()
    assert lines[2] == f"Gate: no new failures. Baseline: run {first_run}."
    counts_at = lines.index(
        f"Compared with baseline run {first_run}: 1 new failures, 1 fixed, 1 still failing, "
        "0 flaky, 0 new cases, 0 removed, 1 still passing."
    )
    new_failure = lines[counts_at + 1]
    assert new_failure.startswith(f"NEW FAIL {ids[BREAKS]} ({BREAKS}): "), "named by its input"
    block = indented_under(lines, counts_at + 1)
    assert any("stripe.refund was never called" in line for line in block), block
    assert block[-1] == f"    Case card: {card}"
    first_listed = next(i for i, line in enumerate(lines) if line.startswith("FAIL "))
    assert counts_at < first_listed, "the new failures come before every other failure"
    gate_line = next(line for line in lines if line.startswith("CI gate: "))
    assert gate_line == "CI gate: FAIL: 1 case that passed in the baseline run no longer passes."

    page = rendered(comment)
    counts = {row[0]: row[1] for row in page.rows if len(row) == 2}
    assert counts["New failures"] == "1" and counts["Fixed"] == "1"
    assert counts["Still failing"] == "1" and counts["Still passing"] == "1"
    assert page.links[card] == BREAKS, "the new failure links to its case card"
    assert page.links[f"{PUBLIC_URL}/runs/{run_id}"] == "Open the run in AgentLasso"
    text = comment.read_text()
    assert text.index("New failures (1)") < text.index("Still failing (1)")
    assert f"`{ids[STILL]}`" in text, "the still failing case is in its collapsed section"

    # A baseline named on the command line is the one the run compares with.
    named = cli(linked_api_url, api_key, *gate, "--baseline", first_run)
    assert named.returncode == 1, named.stdout + named.stderr
    named_id = run_id_printed(named.stdout)
    assert f"Baseline: run {first_run}." in named.stdout
    with httpx.Client(base_url=linked_api_url, headers={"x-api-key": api_key}) as client:
        answer = client.get(f"/api/v1/eval-runs/{named_id}").json()
    assert answer["baseline_run_id"] == first_run and answer["gate"] == "no_new_failures"
    assert answer["new_failures"] == 1


def test_the_threshold_gate_is_the_default_and_reports_the_comparison_too(
    linked_api_url: str, api_key: str, tmp_path: Path
) -> None:
    agent = Agent(tmp_path)
    dataset, _ = make_dataset(linked_api_url, api_key)
    agent.answer_badly()
    command = ("ci", "--dataset", dataset, "--agent-cmd", agent.command)
    assert cli(linked_api_url, api_key, *command).returncode == 0
    agent.answer_badly(STILL)
    done = cli(linked_api_url, api_key, *command)
    assert done.returncode == 1
    assert "Gate: pass rate 100.0%. Baseline: run " in done.stdout
    assert "Compared with baseline run " in done.stdout and "NEW FAIL " in done.stdout
    assert "CI gate: FAIL: Pass rate 75.0% is below the threshold 100.0%" in done.stdout


@pytest.mark.parametrize("baseline", ["nope", str(uuid.uuid4())])
def test_a_bad_baseline_exits_2_naming_the_flag(
    linked_api_url: str, api_key: str, tmp_path: Path, baseline: str
) -> None:
    agent = Agent(tmp_path)
    agent.answer_badly()
    dataset, _ = make_dataset(linked_api_url, api_key)
    done = cli(linked_api_url, api_key, "ci", "--dataset", dataset, "--agent-cmd", agent.command,
               "--baseline", baseline)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: --baseline: The baseline must be a completed run of the same dataset, "
        "in your project."
    ]


def test_a_baseline_of_another_dataset_is_refused(
    linked_api_url: str, api_key: str, tmp_path: Path
) -> None:
    agent = Agent(tmp_path)
    agent.answer_badly()
    other, _ = make_dataset(linked_api_url, api_key)
    earlier = cli(linked_api_url, api_key, "ci", "--dataset", other, "--agent-cmd", agent.command)
    dataset, _ = make_dataset(linked_api_url, api_key)
    done = cli(linked_api_url, api_key, "ci", "--dataset", dataset, "--agent-cmd", agent.command,
               "--baseline", run_id_printed(earlier.stdout))  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("error: --baseline: ")


async def test_run_gates_on_new_failures_against_the_auto_baseline(
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
    tmp_path: Path,
) -> None:
    workers.start()
    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, ["refund 1", "promise 2", "refund 3"])
    first = await start_run(client, dataset_id=dataset_id, agent_id=agent_id)
    assert (await wait_final(client, first["run_id"]))["status"] == "completed"
    # A stricter check on "refund 3": a new failure, from a changed case rather than the agent.
    cases = (await client.get(f"/api/v1/datasets/{dataset_id}/test-cases")).json()["items"]
    stricter = next(case for case in cases if case["input"] == "refund 3")
    checks = [*stricter["checks"], {"type": "output_contains", "value": "within the hour"}]
    patched = await client.patch(f"/api/v1/test-cases/{stricter['id']}", json={"checks": checks})
    assert patched.status_code == 200, patched.text

    comment = tmp_path / "comment.md"
    done = await cli_async(
        base_url, api_key, "run", "--dataset", dataset_id, "--agent", agent_id, "--wait",
        "--gate", "no_new_failures", "--baseline", "auto", "--comment-file", str(comment),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"Gate: no new failures. Baseline: run {first['run_id']}." in lines
    counts_at = next(i for i, line in enumerate(lines) if line.startswith("Compared with"))
    assert "1 new failures" in lines[counts_at] and "1 still failing" in lines[counts_at]
    assert lines[counts_at + 1].startswith(f"NEW FAIL {stricter['id']} (refund 3): ")
    assert "    The case was edited since the baseline: a check may have changed." in lines
    assert "CI gate: FAIL: " in done.stdout

    page = rendered(comment)
    assert ["New failures", "1"] in page.rows
    assert "(the case was edited since the baseline)" in comment.read_text()
