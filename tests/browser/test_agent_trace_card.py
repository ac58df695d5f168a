"""The run envelope read in Chromium (contract section 14): an agent instrumented with the real
OpenTelemetry SDK reads the traceparent each call carries and exports its spans to the
platform; the case card shows its model and tool calls beside the reply, links to the trace,
and the trace page links back to the case result. Spans that arrive after the result show once
they are in. axe-core on each page."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import msgspec
import pytest
from playwright.async_api import Page, expect

from tests.support.api import all_results, create_dataset, start_run, wait_final
from tests.support.browser import assert_accessible, screenshot
from tests.support.otel_agent import MODEL, OtelAgent, running_otel_agent
from tests.support.processes import WorkerProcesses
from tests.support.waiting import eventually

CHECKS = [{"id": "looked-up", "type": "tool_called", "tool": "orders.lookup"}]


@pytest.fixture
def otel_agent(base_url: str, api_key: str) -> Iterator[OtelAgent]:
    with running_otel_agent(base_url, api_key) as agent:
        yield agent


async def a_run_of(client: httpx.AsyncClient, agent: OtelAgent) -> dict[str, dict[str, str]]:
    """The two cases run by the workers; each result by its input's first word."""
    registered = await client.post("/api/v1/agents", json={"name": "Refunds", "url": agent.url})
    agent_id = registered.json()["id"]
    dataset = await create_dataset(client)
    lines = b"".join(
        msgspec.json.encode({"input": text, "checks": CHECKS, "description": text}) + b"\n"
        for text in ("refund order 1234", "late refund of order 1234")
    )
    imported = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import", content=lines,
        headers={"content-type": "application/x-ndjson"},
    )  # fmt: skip
    assert imported.status_code == 201, imported.text
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id)
    assert (await wait_final(client, run["run_id"]))["ci_pass"] is True
    inputs = {
        case["id"]: case["input"]
        for case in (await client.get(f"/api/v1/datasets/{dataset['id']}/test-cases")).json()[
            "items"
        ]
    }
    return {
        inputs[result["test_case_id"]].split()[0]: {**result, "run_id": run["run_id"]}
        for result in await all_results(client, run["run_id"])
    }


async def trace_arrives(client: httpx.AsyncClient, trace_id: str) -> None:
    async def arrived() -> bool:
        return (await client.get(f"/api/v1/traces/{trace_id}")).status_code == 200

    await eventually(arrived, 30, what=f"trace {trace_id} read from the agent's spans")


async def test_the_case_card_shows_the_agents_own_spans_and_the_trace_links_back(
    signed_in_page: Page, base_url: str, api_key: str, otel_agent: OtelAgent,
    workers: WorkerProcesses,
) -> None:  # fmt: skip
    page = signed_in_page
    workers.start()
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        results = await a_run_of(client, otel_agent)
        early, late = results["refund"], results["late"]
        sent = {parent.split("-")[1] for parent in otel_agent.traceparents}
        assert {early["agent_trace_id"], late["agent_trace_id"]} == sent
        await trace_arrives(client, early["agent_trace_id"])

    await page.goto(f"/runs/{early['run_id']}/cases/{early['test_case_id']}")
    section = page.get_by_role("region", name="The agent's trace")
    await expect(section).to_contain_text("3 spans the agent exported for this call")
    steps = section.locator("li.tool-call")
    await expect(steps).to_have_count(2)
    await expect(steps.nth(0)).to_contain_text(f"Model {MODEL}")
    await expect(steps.nth(0)).to_contain_text("412 tokens in, 37 out")
    await expect(steps.nth(1)).to_contain_text("Tool orders.lookup")
    await expect(steps.nth(1)).to_contain_text('"order": 1234')
    await expect(steps.nth(1)).to_contain_text('"status": "paid"')
    await expect(page.get_by_role("region", name="The agent's reply")).to_contain_text(
        "I have started the refund"
    )
    await assert_accessible(page, context="case card with the agent's own spans")
    await screenshot(page, "case-card-agent-trace")

    await section.get_by_role("link", name=f"Trace {early['agent_trace_id'][:8]}").click()
    back = page.get_by_role("region", name="Case results of this call")
    await expect(back).to_contain_text("passed")
    await assert_accessible(page, context="trace page linking back to its case result")
    await back.get_by_role("link").click()
    await expect(page.get_by_role("region", name="The agent's trace")).to_be_visible()

    # Spans that come after the result: the card says so, then shows them once they are in.
    await page.goto(f"/runs/{late['run_id']}/cases/{late['test_case_id']}")
    waiting = page.get_by_role("region", name="The agent's trace")
    await expect(waiting).to_contain_text("no spans under it have arrived")
    await expect(waiting).to_contain_text(late["agent_trace_id"])
    await asyncio.to_thread(otel_agent.send_held)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        await trace_arrives(client, late["agent_trace_id"])
    await page.reload()
    await expect(waiting.locator("li.tool-call")).to_have_count(2)
    await assert_accessible(page, context="case card once late spans arrived")
