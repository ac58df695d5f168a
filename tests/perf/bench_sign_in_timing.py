"""Benchmark: a password sign-in's time for a wrong password and for an unknown email, which
must not tell one from the other, and a right password's (the bar: under 150 ms).

    .venv/bin/python -m tests.perf.bench_sign_in_timing [--attempts 200]

A real `agentlasso api` process, PostgreSQL and Redis. The attempts interleave (wrong password,
unknown email, right password), so drift in the machine's load falls on all three alike; the
known address's failure count is cleared between attempts (untimed) so it never locks. Times
are the client's on the same machine: the server's time plus a loopback round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
import uuid

import asyncpg
import httpx

from agentlasso.services.accounts import create_user_at
from tests.perf.harness import server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import api_process

PASSWORD = "correct horse battery staple"
_LOGIN_TOKEN = re.compile(r'name="login_token" value="([^"]+)"')


async def attempt(web: httpx.AsyncClient, email: str, password: str, expect: int) -> float:
    """Milliseconds one sign-in took, from the form's post to its answer."""
    form = await web.get("/login")
    token = _LOGIN_TOKEN.search(form.text)
    assert token is not None
    fields = {"email": email, "password": password, "login_token": token.group(1)}
    started = time.perf_counter()
    answer = await web.post("/login/password", data=fields)
    taken = (time.perf_counter() - started) * 1000
    assert answer.status_code == expect, answer.text[:300]
    return taken


async def measure(base_url: str, database_url: str, attempts: int) -> dict[str, list[float]]:
    """The three distributions, `attempts` each."""
    email = f"bench-{uuid.uuid4().hex[:8]}@example.com"
    created = await create_user_at(database_url, email, f"bench-{uuid.uuid4().hex[:8]}", "owner")
    taken: dict[str, list[float]] = {"wrong password": [], "unknown email": [], "right": []}
    connection = await asyncpg.connect(database_url)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, trust_env=False) as web:
        form = await web.get("/set-password", params={"token": created.password_token})
        token = _LOGIN_TOKEN.search(form.text)
        assert token is not None
        fields = {"token": created.password_token, "login_token": token.group(1)}
        fields |= {"password": PASSWORD, "password_again": PASSWORD}
        assert (await web.post("/set-password", data=fields)).status_code == 303
        for number in range(attempts + 5):
            await connection.execute("DELETE FROM sign_in_failures")
            wrong = await attempt(web, email, PASSWORD + " nope", 401)
            unknown = await attempt(web, f"nobody-{number}@example.com", PASSWORD, 401)
            right = await attempt(web, email, PASSWORD, 303)
            if number >= 5:  # the first few warm the process up
                taken["wrong password"].append(wrong)
                taken["unknown email"].append(unknown)
                taken["right"].append(right)
    await connection.close()
    return taken


def report(taken: dict[str, list[float]]) -> None:
    """Median, p95 and spread of each distribution, and the gap that matters."""
    for name, times in taken.items():
        ordered = sorted(times)
        p95 = ordered[int(len(ordered) * 0.95) - 1]
        print(
            f"{name:>15}: n={len(times)} median {statistics.median(times):6.1f} ms"
            f"  p95 {p95:6.1f} ms  stdev {statistics.stdev(times):5.1f} ms"
        )
    gap = statistics.median(taken["unknown email"]) - statistics.median(taken["wrong password"])
    print(f"unknown email minus wrong password, medians: {gap:+.1f} ms")


def main() -> None:
    """Start the platform, measure, print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--attempts", type=int, default=200)
    attempts = parser.parse_args().attempts
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            with api_process(database_url, redis_url) as (base_url, _pid):
                report(asyncio.run(measure(base_url, database_url, attempts)))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
