"""A worker's duties of evaluating alerts and delivering their webhooks (contract section 18).

Evaluating: due alerts are locked (skipping those another worker holds), their metric read
over the window, and their new state stored; a change of state that is posted is written, in
the same transaction, to the outbox (`alert_events`) with its body. Delivering: pending posts
are leased one attempt at a time, sent signed, and marked delivered on a 2xx; otherwise tried
again with a growing delay, and given up after MAX_DELIVERY_ATTEMPTS. A post is made once per
change, unless a worker dies mid-post (the lease then runs out and another sends it again;
X-AgentLasso-Delivery lets the receiver tell).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from agentlasso.db import alert_readings, alerts
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import trace_rules as rule_rows
from agentlasso.db.alerts import Delivery
from agentlasso.db.pool import Connection
from agentlasso.domain.alerts import (
    MAX_DELIVERY_ATTEMPTS,
    Alert,
    AlertState,
    Reading,
    posts_change,
    retry_delay_s,
    state_of,
)
from agentlasso.observability import metrics
from agentlasso.services.alert_delivery import (
    POST_TIMEOUT_S,
    Link,
    Named,
    change_payload,
    failing_links,
    post_signed,
)
from agentlasso_workers.state import WorkerState

log = logging.getLogger("agentlasso.alerts")

EVALUATED_AT_ONCE = 50
DELIVERED_AT_ONCE = 20
# Links to at most this many failing traces or cases in a payload.
FAILING_LINKS = 10
# A delivery's attempt is leased this long: past the post's timeout, with room.
DELIVERY_LEASE_S = POST_TIMEOUT_S * 3


async def evaluate_due_alerts(state: WorkerState) -> None:
    """Evaluate the alerts that are due, a batch per transaction, until none is."""
    while True:
        async with state.pool.acquire() as connection, connection.transaction():
            due = await alerts.lock_due(connection, EVALUATED_AT_ONCE)
            for alert in due:
                await _evaluate(state, connection, alert)
        if len(due) < EVALUATED_AT_ONCE:
            return


async def _evaluate(state: WorkerState, connection: Connection, alert: Alert) -> None:
    reading = await alert_readings.read_metric(connection, alert)
    found = state_of(reading, alert.warn, alert.alert, alert.min_samples)
    metrics.ALERTS_EVALUATED.labels(found).inc()
    if found != alert.state:
        payload = None
        if posts_change(alert.state, found):
            payload = await _payload(state, connection, alert, found, reading)
        await alerts.add_event(connection, alert.id, (alert.state, found), reading, payload)
    await alerts.record_reading(
        connection, alert.id, found, reading, state.settings.alert_evaluate_s
    )


async def _payload(
    state: WorkerState, connection: Connection, alert: Alert, found: AlertState, reading: Reading
) -> bytes:
    public_url = state.settings.public_url
    links: tuple[Link, ...] = ()
    if alert.rule_id is not None:
        rule = await rule_rows.get_rule(connection, alert.project_id, alert.rule_id)
        source = Named(type="trace_rule", id=str(alert.rule_id), name=rule.name if rule else "")
        traces = await alert_readings.failing_traces(
            connection, alert.rule_id, alert.window_s, FAILING_LINKS
        )
        links = failing_links(public_url, traces=traces)
    else:
        assert alert.dataset_id is not None
        dataset = await dataset_rows.get_dataset(connection, alert.project_id, alert.dataset_id)
        name = dataset.name if dataset else ""
        source = Named(type="dataset", id=str(alert.dataset_id), name=name)
        cases = await alert_readings.failing_cases(connection, alert, FAILING_LINKS)
        links = failing_links(public_url, cases=cases)
    change = (alert.state, found)
    return change_payload(alert, source, change, reading, (datetime.now(UTC), public_url, links))


async def deliver_due_webhooks(state: WorkerState) -> None:
    """Post the pending deliveries that are due, each once per attempt."""
    while True:
        due = await alerts.claim_deliveries(state.pool, DELIVERED_AT_ONCE, DELIVERY_LEASE_S)
        if not due:
            return
        await asyncio.gather(*(_deliver(state, delivery) for delivery in due))


async def _deliver(state: WorkerState, delivery: Delivery) -> None:
    target = (delivery.alert_id, delivery.webhook_url, delivery.sealed_secret)
    try:
        outcome = await post_signed(
            state.agent_client, state.secret_key, target, delivery.payload, str(delivery.event_id)
        )
    except Exception as exc:  # a bug here must not leave the delivery leased forever
        log.exception("alert webhook %d failed", delivery.event_id)
        outcome = f"the post failed: {type(exc).__name__}"
    if isinstance(outcome, int) and 200 <= outcome < 300:
        await alerts.mark_delivered(state.pool, delivery.event_id)
        metrics.ALERT_WEBHOOKS.labels("delivered").inc()
        return
    error = f"The webhook answered {outcome}." if isinstance(outcome, int) else outcome
    give_up = delivery.attempts >= MAX_DELIVERY_ATTEMPTS
    await alerts.mark_failed(
        state.pool, delivery.event_id, error, retry_delay_s(delivery.attempts), give_up
    )
    metrics.ALERT_WEBHOOKS.labels("gave_up" if give_up else "retried").inc()
