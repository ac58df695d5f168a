"""Benchmark: what the role check adds to a page (issue 26 bar: under 1 ms).

    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_role_check [--rounds 400]

A real `agentlasso api` process and PostgreSQL. The role check is two things: the user's
effective role, read in the query that finds the session (a join on memberships and
project_roles), and the comparison with the table's rule. Measured three ways:
- the session query with the role join against the same query without it, on the server's
  database, with a real user session's token (the role check's own database cost);
- `require_role` in process (the comparison with the table's rule);
- for context, the server time (Server-Timing) of GET /datasets signed in as a user (the role
  path) against a key's session (the scope path), interleaved.
The figure held to the bar is the first two together: the join's median extra plus the check's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import timeit
import uuid

import httpx

from agentlasso.db import web_sessions
from agentlasso.db.pool import connect
from agentlasso.http.permissions import require_role
from agentlasso.services.accounts import create_user_at
from agentlasso.services.api_keys import create_key_for_project_name
from agentlasso.services.web_sessions import IDLE, LIFETIME, token_hash
from tests.perf.bench_run_pages import server_ms
from tests.perf.bench_web import signed_in
from tests.perf.harness import server_urls
from tests.support.accounts import PASSWORD
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import api_process

TARGET_MS = 1.0
LIMIT_SETTINGS = (
    "WEB_RATE_LIMIT_PER_S",
    "WEB_RATE_LIMIT_BURST",
    "RATE_LIMIT_PER_S",
    "RATE_LIMIT_BURST",
)
# The session query as it was before roles (app/db/web_sessions.py before issue 26's roles).
_WITHOUT_ROLE = """
WITH live AS (
    SELECT s.token_hash, s.project_id, s.user_id, u.email, s.csrf_token, s.last_seen_at,
           s.api_key_id, k.prefix,
           coalesce(k.scope, 'admin') AS scope
    FROM web_sessions s LEFT JOIN api_keys k ON k.id = s.api_key_id
    LEFT JOIN users u ON u.id = s.user_id
    WHERE s.token_hash = $1 AND s.expires_at > now()
      AND (s.api_key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL))
      AND (s.user_id IS NULL
           OR EXISTS (SELECT 1 FROM memberships m JOIN projects p
                      ON p.organisation_id = m.organisation_id
                      WHERE m.user_id = s.user_id AND p.id = s.project_id))
), kept_alive AS (
    UPDATE web_sessions s
    SET last_seen_at = now(), expires_at = least(s.created_at + $2::interval, now() + $3::interval)
    FROM live
    WHERE s.token_hash = live.token_hash AND live.last_seen_at < now() - interval '1 minute'
)
SELECT project_id, user_id, email, csrf_token, api_key_id, prefix, scope FROM live
"""


def user_session(base_url: str, database_url: str, organisation: str) -> httpx.Client:
    """A client signed in as a new viewer of the organisation, through the set-password link."""
    created = asyncio.run(create_user_at(database_url, "bench@example.com", organisation, "viewer"))
    client = httpx.Client(base_url=base_url, timeout=120, trust_env=False)
    form = client.get("/set-password", params={"token": created.password_token})
    login_token = form.text.split('name="login_token" value="', 1)[1].split('"', 1)[0]
    answer = client.post(
        "/set-password",
        data={
            "token": created.password_token, "login_token": login_token,
            "password": PASSWORD, "password_again": PASSWORD,
        },
    )  # fmt: skip
    assert answer.status_code == 303, answer.text[:300]
    return client


async def query_ms(database_url: str, session_token: str, rounds: int) -> tuple[float, float]:
    """Median milliseconds of the session query with the role join, and without it."""
    connection = await connect(database_url)
    hashed = token_hash(session_token)
    queries = {"with": web_sessions._USE_SESSION, "without": _WITHOUT_ROLE}
    taken: dict[str, list[float]] = {"with": [], "without": []}
    try:
        for round_number in range(rounds + 20):
            for name in ("with", "without") if round_number % 2 else ("without", "with"):
                started = time.perf_counter()
                row = await connection.fetchrow(queries[name], hashed, LIFETIME, IDLE)
                spent_ms = (time.perf_counter() - started) * 1000
                assert row is not None
                if round_number >= 20:  # the first ones warm the plan cache up
                    taken[name].append(spent_ms)
    finally:
        await connection.close()
    return statistics.median(taken["with"]), statistics.median(taken["without"])


def check_ms() -> float:
    """Milliseconds one `require_role` takes, for an allowed page."""
    number = 200_000
    seconds = timeit.timeit(lambda: require_role("viewer", "GET", "/datasets"), number=number)
    return seconds / number * 1000


def page_ms(user: httpx.Client, key: httpx.Client, rounds: int) -> tuple[list[float], list[float]]:
    """Server milliseconds of GET /datasets as the user and as the key's session, interleaved."""
    for client in (user, key, user, key):
        client.get("/datasets")
    as_user, as_key = [], []
    for _ in range(rounds):
        as_user.append(server_ms(user.get("/datasets")))
        as_key.append(server_ms(key.get("/datasets")))
    return as_user, as_key


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=400)
    rounds = parser.parse_args().rounds
    organisation = f"bench-roles-{uuid.uuid4().hex[:8]}"
    # Out of the way: the benchmark asks faster than a person, and measures the check only.
    limits = {f"AGENTLASSO_{name}": "100000" for name in LIMIT_SETTINGS}
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            with api_process(database_url, redis_url, limits) as (base_url, _pid):
                user = user_session(base_url, database_url, organisation)
                key = asyncio.run(create_key_for_project_name(database_url, organisation)).key
                keyed = signed_in(base_url, key)
                with_ms, without_ms = asyncio.run(
                    query_ms(database_url, user.cookies["agentlasso_session"], rounds)
                )
                one_check_ms = check_ms()
                as_user, as_key = page_ms(user, keyed, rounds)
        finally:
            asyncio.run(drop_database(postgres_url, database_url))
    added_ms = max(0.0, with_ms - without_ms) + one_check_ms
    print(
        f"session query, median: {with_ms:.3f} ms with the role join, {without_ms:.3f} ms without"
    )
    print(f"require_role: {one_check_ms * 1000:.2f} µs a check")
    print(
        f"GET /datasets server time, median (p95): as a user {statistics.median(as_user):.2f} ms "
        f"({p95(as_user):.2f}), as a key's session {statistics.median(as_key):.2f} ms "
        f"({p95(as_key):.2f}); {rounds} rounds each"
    )
    verdict = "under" if added_ms < TARGET_MS else "OVER"
    print(f"the role check adds {added_ms:.3f} ms to a page: {verdict} the {TARGET_MS:g} ms bar")


if __name__ == "__main__":
    main()
