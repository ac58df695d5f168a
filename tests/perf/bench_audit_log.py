"""Benchmark: Settings -> Audit log and GET /api/v1/audit-log over a project of 1,000,000 entries.

    PYTHONPATH=. .venv/bin/python -m tests.perf.bench_audit_log [--entries 1000000] [--rounds 60]

A real `agentlasso api` process and PostgreSQL. The project's log is filled with a chained log
(COPY, every hash computed as the app computes it) of sign-ins, agent changes and deletions,
one entry in a thousand a revoked key. Each page is asked for `rounds` times: the newest page,
one filtered by a rare action, one by an actor, and one deep in the log by cursor; its server
time is read from Server-Timing. Target (issue 26): p95 under 30 ms. Then: how long a change
takes to append after 1,000,000 entries, and how long `agentlasso audit verify` takes to walk
them (printed, no target).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import httpx
import msgspec

from agentlasso.db.pool import connect
from agentlasso.domain.audit import (
    AuditEntry,
    AuditObject,
    ChangeValue,
    KeyActor,
    actor_label,
    entry_hash,
)
from agentlasso.services.audit import verify_chain
from tests.perf.bench_run_pages import server_ms
from tests.perf.bench_web import signed_in
from tests.perf.harness import new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.processes import api_process
from tests.support.web import project_of

TARGET_MS = 30.0
# Between pages, so the session stays under its own limit of 20 pages a second.
PACE_S = 0.06
_COLUMNS = (
    "project_id", "seq", "at", "actor", "actor_label", "action", "object_type", "object_id",
    "ip", "changes", "prev_hash", "entry_hash",
)  # fmt: skip


def entry_of(project_id: UUID, seq: int, at: datetime, prev: bytes, key: KeyActor) -> AuditEntry:
    """The `seq`th entry of the filled log: mostly sign-ins and agent changes."""
    changes: dict[str, ChangeValue]
    if seq % 1000 == 0:
        action, subject, changes = (
            "api_key.revoked",
            AuditObject(type="api_key", id=str(key.id)),
            {},
        )
    elif seq % 3 == 0:
        subject = AuditObject(type="agent", id=str(uuid4()))
        action, changes = "agent.changed", {"fields": ["timeout_s", "url"]}
    else:
        action, subject, changes = "sign_in.succeeded", None, {"method": "api_key"}
    unhashed = AuditEntry(
        project_id=project_id, seq=seq, at=at, actor=key, action=action,  # type: ignore[arg-type]
        object=subject, ip="203.0.113.9", changes=changes, prev_hash=prev, entry_hash=b"",
    )  # fmt: skip
    return msgspec.structs.replace(unhashed, entry_hash=entry_hash(prev, unhashed))


def record_of(entry: AuditEntry) -> tuple[object, ...]:
    """The entry as COPY writes it."""
    return (
        entry.project_id, entry.seq, entry.at, msgspec.to_builtins(entry.actor),
        actor_label(entry.actor), entry.action, entry.object.type if entry.object else None,
        entry.object.id if entry.object else None, entry.ip, entry.changes,
        entry.prev_hash, entry.entry_hash,
    )  # fmt: skip


async def fill(database_url: str, key: str, entries: int) -> None:
    """The key's project's log, `entries` long after what it holds, chained."""
    connection = await connect(database_url)
    try:
        project_id = await project_of(connection, key)
        head = await connection.fetchrow(
            "SELECT seq, entry_hash FROM audit_log WHERE project_id = $1 ORDER BY seq DESC LIMIT 1",
            project_id,
        )
        assert head is not None, "a new project's log holds its key's creation"
        seq, prev = head["seq"], bytes(head["entry_hash"])
        actor = KeyActor(id=uuid4(), prefix=key[:11])
        start = datetime.now(UTC) - timedelta(seconds=entries)
        started = time.perf_counter()
        while entries > 0:
            batch = []
            for _ in range(min(entries, 50_000)):
                seq += 1
                entry = entry_of(project_id, seq, start + timedelta(seconds=seq), prev, actor)
                prev = entry.entry_hash
                batch.append(record_of(entry))
            await connection.copy_records_to_table("audit_log", records=batch, columns=_COLUMNS)
            entries -= len(batch)
        await connection.execute("ANALYZE audit_log")
        print(f"filled to entry {seq:,} in {time.perf_counter() - started:.0f} s")
    finally:
        await connection.close()


def report(name: str, taken: list[float]) -> None:
    """A page's server-time figures beside the target."""
    p95 = statistics.quantiles(taken, n=20)[18]
    verdict = "ok" if p95 < TARGET_MS else "OVER"
    print(f"{name:<40} median {statistics.median(taken):6.1f} ms  p95 {p95:6.1f} ms  ({verdict})")


def pages(base_url: str, key: str, rounds: int) -> None:
    """Each page's server time, `rounds` times, after two to warm up."""
    browser = signed_in(base_url, key)
    deep = (
        httpx.get(
            f"{base_url}/api/v1/audit-log", headers={"x-api-key": key}, params={"limit": 1}
        ).json()["items"][0]["seq"]
        // 2
    )
    asked = {
        "newest page": {},
        "by a rare action (api_key.revoked)": {"action": "api_key.revoked"},
        "by an actor": {"actor": key[:11]},
        "halfway down, by cursor": {"cursor": str(deep)},
    }
    for name, params in asked.items():
        for _ in range(2):
            browser.get("/settings/audit-log", params=params)
        taken = []
        for _ in range(rounds):
            answer = browser.get("/settings/audit-log", params=params)
            assert answer.status_code == 200, (answer.status_code, answer.text[-1500:])
            taken.append(server_ms(answer))
            # A session may ask for 20 pages a second (its rate limit): stay under it.
            time.sleep(PACE_S)
        report(f"page: {name}", taken)


async def append_and_verify(database_url: str, base_url: str, key: str) -> None:
    """One change's time after the fill, and the time to verify the whole chain."""
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": key}) as api:
        started = time.perf_counter()
        answer = await api.put("/api/v1/trace-settings", json={"retention_days": 7})
        assert answer.status_code == 200, answer.text
        took_ms = (time.perf_counter() - started) * 1000
        print(f"the retention changed (and its entry appended): {took_ms:.1f} ms")
    connection = await connect(database_url)
    try:
        started = time.perf_counter()
        check = await verify_chain(connection, await project_of(connection, key))
        took = time.perf_counter() - started
    finally:
        await connection.close()
    assert check.broken is None, check.broken
    print(f"verified {check.held_seq:,} entries in {took:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            with api_process(database_url, redis_url) as (base_url, _pid):
                key = new_key(database_url)
                asyncio.run(fill(database_url, key, args.entries))
                pages(base_url, key, args.rounds)
                asyncio.run(append_and_verify(database_url, base_url, key))
        finally:
            asyncio.run(drop_database(postgres_url, database_url))


if __name__ == "__main__":
    main()
