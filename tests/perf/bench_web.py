"""Benchmark: the web app's pages on a 100,000-case dataset, and what a preview adds.

    .venv/bin/python -m tests.perf.bench_web [--cases 100000] [--rounds 60]

A real `agentlasso api` process, PostgreSQL and Redis; a signed-in session; each page asked
for `rounds` times. Times are measured by the client on the same machine, so they are the
server's time plus a loopback round trip; a preview's own share is read from its Server-Timing
header (the server's time less the agent's and the judge's). Targets (issue 11): p95 of the
dataset page and of a search under 50 ms, of the rubric editor under 30 ms; a preview adds
under 5 ms to the agent's and the judge's own time; any page's HTML plus our CSS and JS under
120 KB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import time
from collections.abc import Callable

import httpx

from tests.perf.harness import UNLIMITED, body_chunks, delayed_agent, new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import SECRET_KEY, api_process

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
_ASSETS = re.compile(r'(?:src|href)="(/static/[^"]+)"')
_LATENCY = re.compile(r"(\d+) ms · 1 attempt")


def signed_in(base_url: str, key: str) -> httpx.Client:
    """A client with a session, as a browser has after signing in."""
    client = httpx.Client(base_url=base_url, timeout=120, trust_env=False)
    form = client.get("/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert token is not None
    signed = client.post("/login", data={"api_key": key, "login_token": token.group(1)})
    assert signed.status_code == 303, signed.text[:300]
    return client


def timed(get: Callable[[], httpx.Response], rounds: int) -> list[float]:
    """Milliseconds each of `rounds` requests took (after two to warm up)."""
    for _ in range(2):
        get()
    taken = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = get()
        taken.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:300]
    return taken


def p(taken: list[float], q: float) -> float:
    ordered = sorted(taken)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def report(name: str, taken: list[float], target_ms: float) -> None:
    print(
        f"{name}: p50 {statistics.median(taken):.1f} ms, p95 {p(taken, 0.95):.1f} ms "
        f"(target p95 < {target_ms:g} ms)"
    )


def page_weight(client: httpx.Client, path: str) -> int:
    """Bytes of a page's HTML and of the scripts and stylesheets it loads (uncompressed)."""
    page = client.get(path)
    assets = _ASSETS.findall(page.text)
    other_hosts = re.findall(r'(?:src|href)="(https?://[^"]+)"', page.text)
    assert not other_hosts, other_hosts
    return len(page.content) + sum(len(client.get(asset).content) for asset in assets)


def run(base_url: str, key: str, agent_url: str, cases: int, rounds: int) -> None:
    api = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=300)
    dataset = api.post("/api/v1/datasets", json={"name": "bench"}).json()
    started = time.perf_counter()
    imported = api.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=b"".join(body_chunks(cases, expectation=False)),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text[:300]
    print(f"imported {cases:,} cases in {time.perf_counter() - started:.1f} s")
    case_id = api.get(f"/api/v1/datasets/{dataset['id']}/test-cases", params={"limit": 1}).json()[
        "items"
    ][0]["id"]
    api.post("/api/v1/agents", json={"name": "bench agent", "url": agent_url})
    browser = signed_in(base_url, key)
    dataset_path = f"/datasets/{dataset['id']}"
    last = cases - 1
    report(
        "dataset page (first 50 of the cases)", timed(lambda: browser.get(dataset_path), rounds), 50
    )
    report(
        f"search matching one case ('Order #{last} ')",
        timed(lambda: browser.get(dataset_path, params={"q": f"Order #{last} "}), rounds),
        50,
    )
    report(
        "search matching every case ('arrived broken')",
        timed(lambda: browser.get(dataset_path, params={"q": "arrived broken"}), rounds),
        50,
    )
    report(
        "filter matching no case (check type AI judge)",
        timed(lambda: browser.get(dataset_path, params={"check_type": "llm_judge"}), rounds),
        50,
    )
    report(
        "filter matching no case (has AI judge checks)",
        timed(lambda: browser.get(dataset_path, params={"judged": "yes"}), rounds),
        50,
    )
    failed = fail_every_thousandth(api, dataset["id"])
    report(
        f"filter matching the {failed} cases that failed in the last run",
        timed(lambda: browser.get(dataset_path, params={"last_run": "failed"}), rounds),
        50,
    )
    report("rubric editor", timed(lambda: browser.get(f"/cases/{case_id}"), rounds), 30)
    preview_overhead(browser, case_id, rounds)
    for name, path in (
        ("datasets", "/datasets"),
        ("dataset page", dataset_path),
        ("rubric editor", f"/cases/{case_id}"),
        ("settings", "/settings"),
    ):
        weight = page_weight(browser, path)
        print(f"page weight, {name}: {weight / 1024:.1f} KB (target < 120 KB)")


def fail_every_thousandth(api: httpx.Client, dataset_id: str) -> int:
    """A finished CI run of the dataset in which one case in a thousand failed; how many."""
    created = api.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    assert created.status_code == 201, created.text[:300]
    run = created.json()
    results = [
        {
            "test_case_id": case["test_case_id"],
            "actual_output": "Sorry." if number % 1000 == 0 else _PASSING_REPLY,
            "actual_tool_calls": _PASSING_CALLS,
        }
        for number, case in enumerate(run["test_cases"])
    ]
    for start in range(0, len(results), 10_000):
        posted = api.post(
            "/api/v1/eval-run-results",
            json={"run_id": run["run_id"], "results": results[start : start + 10_000]},
        )
        assert posted.status_code == 200, posted.text[:300]
    return sum(1 for result in results if result["actual_output"] == "Sorry.")


_PASSING_REPLY = '{"message": "Your refund is on its way: 3-5 business days."}'
_PASSING_CALLS = [{"name": "orders.lookup", "arguments": {}}, {"name": "stripe.refund"}]


def preview_overhead(browser: httpx.Client, case_id: str, rounds: int) -> None:
    """A preview's server time beyond the agent's and the judge's, as its Server-Timing says."""
    editor = browser.get(f"/cases/{case_id}")
    csrf = _CSRF.search(editor.text)
    assert csrf is not None
    form = _editor_fields(editor.text)
    ours, totals, client_side = [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        previewed = browser.post(
            f"/cases/{case_id}",
            data={**form, "csrf_token": csrf.group(1), "action": "preview"},
            # As the Preview button asks: htmx fills the editor's preview slot only.
            headers={"hx-request": "true", "hx-target": "preview-slot"},
        )
        client_side.append((time.perf_counter() - started) * 1000)
        assert previewed.status_code == 200, previewed.text[:500]
        assert _LATENCY.search(previewed.text), "the preview shows no agent call"
        timing = server_timing(previewed)
        totals.append(timing["total"])
        ours.append(timing["total"] - timing["agent"] - timing["judge"])
    print(
        f"preview: server time p50 {statistics.median(totals):.1f} ms (client-side "
        f"{statistics.median(client_side):.1f} ms), of which ours (all but the agent and the "
        f"judge) p50 {statistics.median(ours):.1f} ms, p95 {p(ours, 0.95):.1f} ms "
        "(target < 5 ms; includes the page's rendering)"
    )


def server_timing(response: httpx.Response) -> dict[str, float]:
    """The response's Server-Timing durations, in milliseconds, by name."""
    return {
        name: float(duration)
        for name, duration in re.findall(r"(\w+);dur=([\d.]+)", response.headers["server-timing"])
    }


def _editor_fields(html: str) -> dict[str, str]:
    """The editor form's fields with the values the page shows (enough to preview it)."""
    fields = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', html))
    fields["input"] = re.search(r'<textarea id="input"[^>]*>([^<]*)</textarea>', html).group(1)  # type: ignore[union-attr]
    for name in re.findall(r'<select id="([^"]+)"', html):
        chosen = re.search(
            rf'<select id="{name}"[^>]*>.*?<option value="([^"]*)" selected', html, re.S
        )
        if chosen:
            fields[name] = chosen.group(1)
    tools = re.search(r'<textarea id="checks-1-tools"[^>]*>([^<]*)</textarea>', html)
    if tools:
        fields["checks-1-tools"] = tools.group(1)
    fields.pop("csrf_token", None)
    return {
        name: value.replace("&#34;", '"').replace("&amp;", "&") for name, value in fields.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        env = {
            "AGENTLASSO_SECRET_KEY": SECRET_KEY, "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
            "AGENTLASSO_QUEUE": f"agentlasso:bench:{os.getpid()}", **UNLIMITED,
        }  # fmt: skip
        try:
            with (
                api_process(database_url, redis_url, env) as (base_url, _pid),
                delayed_agent(0, 100) as agent_url,
            ):
                run(base_url, new_key(database_url), agent_url, args.cases, args.rounds)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
