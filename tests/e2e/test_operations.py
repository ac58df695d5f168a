"""What an operator watches: /metrics on the API and a worker, the worker's /live, and
GET /api/v1/workers, with a real worker process running a real run."""

from __future__ import annotations

import re
import signal

import httpx

from tests.support.api import all_results, dataset_of, register_agent, start_run, wait_final
from tests.support.databases import new_project_key
from tests.support.fake_agent import FakeAgentServer
from tests.support.processes import WorkerProcesses, free_port
from tests.support.waiting import eventually

# A sample line: name{labels} value. Labels are checked for ids below.
_SAMPLE = re.compile(r'^(agentlasso_[a-z_]+)(\{(?:[^"}]|"[^"]*")*\})? (\S+)$', re.MULTILINE)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def samples(text: str) -> dict[str, float]:
    """Every agentlasso_* sample of a scrape, keyed by its name and labels."""
    return {name + (labels or ""): float(value) for name, labels, value in _SAMPLE.findall(text)}


async def listed(client: httpx.AsyncClient, pid: int) -> dict[str, object] | None:
    """The worker with this pid as GET /api/v1/workers lists it, if it does."""
    response = await client.get("/api/v1/workers")
    assert response.status_code == 200, response.text
    return next((w for w in response.json()["items"] if w["pid"] == pid), None)


async def test_a_worker_is_listed_with_its_chunks_and_serves_metrics_and_liveness(
    client: httpx.AsyncClient,
    base_url: str,
    database_url: str,
    fake_agent: FakeAgentServer,
    workers: WorkerProcesses,
) -> None:
    fake_agent.delay_s = 0.3
    port = free_port()
    worker = workers.start(concurrency=20, extra_env={"AGENTLASSO_METRICS_PORT": str(port)})
    worker_url = f"http://127.0.0.1:{port}"
    row = await eventually(lambda: listed(client, worker.pid), timeout_s=20)
    assert row is not None and row["chunks_held"] == 0
    assert set(row) == {"id", "host", "pid", "started_at", "last_heartbeat_at", "chunks_held"}

    agent_id = await register_agent(client, fake_agent.url)
    dataset_id = await dataset_of(client, [f"refund {n}" for n in range(200)])
    run = await start_run(client, dataset_id=dataset_id, agent_id=agent_id, concurrency=20)

    async def holding() -> dict[str, object] | None:
        found = await listed(client, worker.pid)
        return found if found is not None and int(str(found["chunks_held"])) > 0 else None

    assert await eventually(holding, timeout_s=20)
    # Another project sees the worker, and none of this project's work on it.
    other_key = await new_project_key(database_url)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": other_key}) as other:
        seen = await listed(other, worker.pid)
        assert seen is not None and seen["chunks_held"] == 0

    async with httpx.AsyncClient(base_url=worker_url) as probe:
        live = await probe.get("/live")
        assert live.status_code == 200
        assert live.json()["status"] == "ok" and live.json()["heartbeat_age_s"] < 10
        final = await wait_final(client, run["run_id"], wait_s=90)
        assert final["status"] == "completed"
        scrape = await probe.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    worker_samples = samples(scrape.text)
    assert worker_samples['agentlasso_chunks_claimed_total{kind="agent"}'] >= 1
    assert worker_samples['agentlasso_chunks_done_total{kind="agent"}'] >= 1
    assert worker_samples['agentlasso_agent_calls_total{outcome="ok"}'] == 200
    assert worker_samples['agentlasso_agent_call_duration_seconds_count{outcome="ok"}'] == 200
    assert worker_samples['agentlasso_runs_finished_total{status="completed"}'] >= 1
    assert "agentlasso_db_pool_max_connections" in worker_samples
    assert "agentlasso_event_loop_lag_seconds" in worker_samples
    assert "agentlasso_worker_heartbeat_age_seconds" in worker_samples
    assert "process_cpu_seconds_total" in scrape.text
    assert not _UUID.search(scrape.text), "no run, case or project id is ever a label"
    assert len(await all_results(client, run["run_id"])) == 200

    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=30)
    assert await listed(client, worker.pid) is None, "a stopped worker removes itself"


async def test_the_api_serves_its_metrics_with_route_templates_and_platform_gauges(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient
) -> None:
    run_id = "00000000-0000-4000-8000-000000000001"
    assert (await client.get(f"/api/v1/eval-runs/{run_id}")).status_code == 404
    scrape = await anonymous.get("/metrics")
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain")
    api_samples = samples(scrape.text)
    route_404 = (
        'agentlasso_http_requests_total{method="GET",'
        'route="/api/v1/eval-runs/{run_id}",status="404"}'
    )
    assert api_samples[route_404] >= 1
    queue_depths = [key for key in api_samples if key.startswith("agentlasso_queue_depth{")]
    assert queue_depths, "the queue's depth is read at each scrape"
    assert any(key.startswith("agentlasso_runs_active{") for key in api_samples)
    assert "agentlasso_trace_batches_waiting" in api_samples
    assert 'agentlasso_db_pool_connections{state="in_use"}' in api_samples
    assert "agentlasso_event_loop_lag_seconds" in api_samples
    assert run_id not in scrape.text and not _UUID.search(scrape.text)


async def test_workers_need_a_project_key(anonymous: httpx.AsyncClient) -> None:
    answer = await anonymous.get("/api/v1/workers")
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/problem+json")
