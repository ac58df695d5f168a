"""`agentlasso ci --agent-protocol` (contract section 14): the CI machine calling an A2A agent
built with the A2A SDK, and an OpenAI-compatible endpoint, with the same mapping as server
mode; each call carries a traceparent whose trace id the stored result keeps."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx

from tests.support.a2a_agent import running_a2a_agent
from tests.support.api import create_dataset
from tests.support.openai_chat_agent import running_openai_endpoint

ROOT = Path(__file__).resolve().parents[2]


async def cli_ci(base_url: str, key: str, *args: str) -> tuple[int, str]:
    """`agentlasso ci` as a CI job runs it (not blocking the loop the test's servers run on)."""
    env = {**os.environ, "AGENTLASSO_URL": base_url, "AGENTLASSO_API_KEY": key}
    env.pop("GITHUB_STEP_SUMMARY", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentlasso.cli", "ci", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, output.decode()


async def dataset_of(base_url: str, key: str, cases: list[dict[str, object]]) -> str:
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as client:
        dataset = await create_dataset(client)
        for case in cases:
            made = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=case)
            assert made.status_code == 201, made.text
    return str(dataset["id"])


async def test_an_a2a_agent_is_gated_from_the_ci_machine(
    api_process_url: str, api_key: str
) -> None:
    cases = [
        {"input": "tools refund 1234",
         "checks": [{"type": "tool_called", "tool": "stripe.refund"}]},
        {"input": "slow refund 1234",
         "checks": [{"type": "output_contains", "value": "done: slow refund 1234"}]},
    ]  # fmt: skip
    dataset = await dataset_of(api_process_url, api_key, cases)
    with running_a2a_agent() as agent:
        code, output = await cli_ci(
            api_process_url, api_key, "--dataset", dataset, "--agent-url", agent.base_url,
            "--agent-protocol", "a2a",
        )  # fmt: skip

    assert code == 0, output
    assert "2 passed, 0 failed" in output


async def test_an_openai_compatible_endpoint_is_gated_with_its_model_and_tools(
    api_process_url: str, api_key: str, tmp_path: Path
) -> None:
    check = {"type": "tool_called", "tool": "lookup_order", "arguments": {"order_id": "4417"}}
    dataset = await dataset_of(api_process_url, api_key, [
        {"input": "Where is order 4417?", "checks": [check]}])  # fmt: skip
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "lookup_order", "input_schema": {"type": "object"}}]))
    async with running_openai_endpoint() as (base_url, model):
        code, output = await cli_ci(
            api_process_url, api_key, "--dataset", dataset,
            "--agent-url", f"{base_url}/chat/completions", "--agent-protocol", "openai_chat",
            "--agent-model", "scripted-model", "--tools", str(tools),
        )  # fmt: skip

    assert code == 0, output
    [sent] = model.requests
    assert sent["model"] == "scripted-model"
    assert sent["tools"][0]["function"]["name"] == "lookup_order"
