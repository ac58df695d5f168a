"""The API as a test drives it: datasets, agents, runs, and reading them back."""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from tests.support.waiting import eventually

# The checks every case of dataset_of carries: the fake agent's refund answer passes both.
CHECKS = [
    {"type": "tool_called", "tool": "stripe.refund"},
    {"type": "output_contains", "value": "3-5 business days"},
]
FINAL = ("completed", "cancelled", "failed")


async def create_dataset(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """Create a dataset through the API and return it."""
    response = await client.post("/api/v1/datasets", json={"name": "support", **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def create_case(client: httpx.AsyncClient, dataset_id: str, **fields: Any) -> dict[str, Any]:
    """Create a test case (by default asking where a refund is) and return it."""
    body = {"input": "where is my refund?", **fields}
    response = await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json=body)
    assert response.status_code == 201, response.text
    case: dict[str, Any] = response.json()
    return case


async def register_agent(client: httpx.AsyncClient, url: str, **fields: Any) -> str:
    """Register an agent (with a secret header) and return its id."""
    body = {"name": "support bot", "url": url, "headers": {"authorization": "Bearer s3cret"}}
    response = await client.post("/api/v1/agents", json={**body, **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def dataset_of(client: httpx.AsyncClient, inputs: list[str]) -> str:
    """A dataset with one case per input, each with CHECKS; its id."""
    dataset = await create_dataset(client, data_context={"region": "eu"})
    lines = b"".join(
        msgspec.json.encode({"input": text, "checks": CHECKS}) + b"\n" for text in inputs
    )
    response = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
    )
    assert response.status_code == 201, response.text
    return str(dataset["id"])


async def start_run(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    """Start a run; the created run."""
    response = await client.post("/api/v1/eval-runs", json=body)
    assert response.status_code == 201, response.text
    run: dict[str, Any] = response.json()
    return run


async def run_now(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The run as it stands."""
    response = await client.get(f"/api/v1/eval-runs/{run_id}")
    assert response.status_code == 200, response.text
    run: dict[str, Any] = response.json()
    return run


async def wait_final(client: httpx.AsyncClient, run_id: str, wait_s: float = 60) -> dict[str, Any]:
    """The run once it ends, by long-polling; as it stands after wait_s if it has not."""
    deadline = time.monotonic() + wait_s
    while True:
        left = max(1, min(30, deadline - time.monotonic()))
        run: dict[str, Any] = (
            await client.get(f"/api/v1/eval-runs/{run_id}", params={"wait_s": left})
        ).json()
        if run["status"] in FINAL or time.monotonic() > deadline:
            return run


async def all_results(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    """Every stored result of a run, page by page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(f"/api/v1/eval-runs/{run_id}/results", params=params)).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


async def wait_done(
    client: httpx.AsyncClient, run_id: str, at_least: int, timeout_s: float = 60
) -> dict[str, Any]:
    """The run once at least `at_least` of its results are in."""

    async def far_enough() -> dict[str, Any] | None:
        run = await run_now(client, run_id)
        return run if run["counts"]["done"] >= at_least else None

    return await eventually(far_enough, timeout_s, what=f"{at_least} results of run {run_id}")
