"""Alerts, their evaluations and the outbox of their webhooks' deliveries."""

from __future__ import annotations

from uuid import UUID

import asyncpg
import msgspec

from agentlasso.db.pool import Connection, Executor
from agentlasso.domain.alerts import Alert, AlertState, Level, Reading

_COLUMNS = (
    "id, project_id, name, rule_id, dataset_id, metric, check_id, window_s, warn, alert, "
    "min_samples, webhook_url, webhook_secret, created_at, state, state_since, last_value, "
    "last_samples, evaluated_at"
)


def _alert(row: asyncpg.Record) -> Alert:
    warn = row["warn"]
    return Alert(
        id=row["id"], project_id=row["project_id"], name=row["name"], rule_id=row["rule_id"],
        dataset_id=row["dataset_id"], metric=row["metric"], check_id=row["check_id"],
        window_s=row["window_s"], warn=None if warn is None else msgspec.convert(warn, Level),
        alert=msgspec.convert(row["alert"], Level), min_samples=row["min_samples"],
        webhook_url=row["webhook_url"], sealed_secret=row["webhook_secret"],
        created_at=row["created_at"], state=row["state"], state_since=row["state_since"],
        last_value=row["last_value"], last_samples=row["last_samples"],
        evaluated_at=row["evaluated_at"],
    )  # fmt: skip


_INSERT = f"""
INSERT INTO alerts (id, project_id, name, rule_id, dataset_id, metric, check_id, window_s,
                    warn, alert, min_samples, webhook_url, webhook_secret)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING {_COLUMNS}
"""


async def insert_alert(executor: Executor, alert: Alert) -> Alert:
    """Store a new alert, due for its first evaluation at once."""
    row = await executor.fetchrow(
        _INSERT, alert.id, alert.project_id, alert.name, alert.rule_id, alert.dataset_id,
        alert.metric, alert.check_id, alert.window_s,
        None if alert.warn is None else msgspec.to_builtins(alert.warn),
        msgspec.to_builtins(alert.alert), alert.min_samples, alert.webhook_url,
        alert.sealed_secret,
    )  # fmt: skip
    assert row is not None
    return _alert(row)


_LIST = f"SELECT {_COLUMNS} FROM alerts WHERE project_id = $1 ORDER BY created_at DESC, id"
_GET = f"SELECT {_COLUMNS} FROM alerts WHERE project_id = $1 AND id = $2"
_DELETE = "DELETE FROM alerts WHERE project_id = $1 AND id = $2 RETURNING name"
_OF_RULE = f"SELECT {_COLUMNS} FROM alerts WHERE rule_id = $1 ORDER BY created_at DESC, id"


async def list_alerts(executor: Executor, project_id: UUID) -> list[Alert]:
    """The project's alerts, newest first."""
    return [_alert(row) for row in await executor.fetch(_LIST, project_id)]


async def alerts_of_rule(executor: Executor, rule_id: UUID) -> list[Alert]:
    """The alerts watching a trace rule."""
    return [_alert(row) for row in await executor.fetch(_OF_RULE, rule_id)]


async def get_alert(executor: Executor, project_id: UUID, alert_id: UUID) -> Alert | None:
    """One of the project's alerts."""
    row = await executor.fetchrow(_GET, project_id, alert_id)
    return None if row is None else _alert(row)


async def delete_alert(executor: Executor, project_id: UUID, alert_id: UUID) -> str | None:
    """Delete an alert and its history; its name, or None when it is not the project's."""
    name: str | None = await executor.fetchval(_DELETE, project_id, alert_id)
    return name


# Due alerts, each held by one worker until its evaluation is stored.
_LOCK_DUE = f"""
SELECT {_COLUMNS} FROM alerts WHERE next_evaluation_at <= now()
ORDER BY next_evaluation_at FOR UPDATE SKIP LOCKED LIMIT $1
"""

_RECORD = """
UPDATE alerts SET evaluated_at = now(), last_value = $2, last_samples = $3,
    next_evaluation_at = now() + make_interval(secs => $5),
    state_since = CASE WHEN state IS DISTINCT FROM $4 THEN now() ELSE state_since END,
    state = $4
WHERE id = $1
"""


async def lock_due(connection: Connection, limit: int) -> list[Alert]:
    """Alerts due for evaluation no other worker holds (for this transaction)."""
    return [_alert(row) for row in await connection.fetch(_LOCK_DUE, limit)]


async def record_reading(
    connection: Connection, alert_id: UUID, state: AlertState, reading: Reading, next_in_s: float
) -> None:
    """Keep what an evaluation read and the state it found; due again in `next_in_s`."""
    await connection.execute(_RECORD, alert_id, reading.value, reading.samples, state, next_in_s)


_ADD_EVENT = """
INSERT INTO alert_events (alert_id, from_state, to_state, value, samples, payload, delivery)
VALUES ($1, $2, $3, $4, $5, $6, $7)
"""


async def add_event(
    connection: Connection,
    alert_id: UUID,
    change: tuple[AlertState | None, AlertState],
    reading: Reading,
    payload: bytes | None,
) -> None:
    """Keep a change of state; with a payload, its delivery is pending (the outbox)."""
    delivery = "pending" if payload is not None else "not_sent"
    await connection.execute(
        _ADD_EVENT, alert_id, *change, reading.value, reading.samples, payload or b"", delivery
    )


_EVENTS = """
SELECT at, from_state, to_state, value, samples, delivery, attempts, last_error, delivered_at
FROM alert_events WHERE alert_id = $1 ORDER BY id DESC LIMIT $2
"""


async def events_of(executor: Executor, alert_id: UUID, limit: int) -> list[asyncpg.Record]:
    """The alert's latest changes of state, newest first."""
    return list(await executor.fetch(_EVENTS, alert_id, limit))


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """A webhook post to make: the event, its body, where it goes, and the sealed secret."""

    event_id: int
    alert_id: UUID
    attempts: int
    payload: bytes
    webhook_url: str
    sealed_secret: bytes


# Taken with a lease: the attempt is due again after it, so a worker that dies mid-post leaves
# the delivery to another (the receiver may then see it twice: X-AgentLasso-Delivery tells).
_CLAIM_DELIVERIES = """
UPDATE alert_events e SET next_attempt_at = now() + make_interval(secs => $2),
    attempts = e.attempts + 1
FROM alerts a
WHERE a.id = e.alert_id AND e.id IN (
    SELECT id FROM alert_events WHERE delivery = 'pending' AND next_attempt_at <= now()
    ORDER BY next_attempt_at FOR UPDATE SKIP LOCKED LIMIT $1
)
RETURNING e.id, e.alert_id, e.attempts, e.payload, a.webhook_url, a.webhook_secret
"""


async def claim_deliveries(executor: Executor, limit: int, lease_s: float) -> list[Delivery]:
    """Pending deliveries due, each counted as an attempt and leased for `lease_s`."""
    rows = await executor.fetch(_CLAIM_DELIVERIES, limit, lease_s)
    return [
        Delivery(
            event_id=row["id"],
            alert_id=row["alert_id"],
            attempts=row["attempts"],
            payload=row["payload"],
            webhook_url=row["webhook_url"],
            sealed_secret=row["webhook_secret"],
        )
        for row in rows
    ]


_DELIVERED = """
UPDATE alert_events SET delivery = 'delivered', delivered_at = now(), last_error = NULL
WHERE id = $1
"""
_FAILED = """
UPDATE alert_events SET last_error = $2, next_attempt_at = now() + make_interval(secs => $3),
    delivery = CASE WHEN $4 THEN 'failed' ELSE 'pending' END
WHERE id = $1
"""


async def mark_delivered(executor: Executor, event_id: int) -> None:
    """The receiver answered 2xx: never posted again."""
    await executor.execute(_DELIVERED, event_id)


async def mark_failed(
    executor: Executor, event_id: int, error: str, retry_in_s: float, give_up: bool
) -> None:
    """The attempt failed: tried again in `retry_in_s`, or given up."""
    await executor.execute(_FAILED, event_id, error, retry_in_s, give_up)
