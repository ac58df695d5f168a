"""Alerts: writing them, reading their state and history, and a test post to the webhook."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from uuid import UUID

import msgspec

from agentlasso.agents import check_agent_url
from agentlasso.db import alerts as alert_rows
from agentlasso.db import datasets as dataset_rows
from agentlasso.db import trace_rules as rule_rows
from agentlasso.domain.alerts import Alert, level_problems
from agentlasso.domain.audit import Caller
from agentlasso.domain.trace_rules import TraceRule
from agentlasso.errors import FieldError, InvalidInput, NotFound
from agentlasso.schemas.alerts import AlertCreate, AlertEvent, TestDelivery
from agentlasso.secrets_box import seal
from agentlasso.services import audit
from agentlasso.services.alert_delivery import post_signed, test_payload
from agentlasso.services.platform import Platform

NO_ALERT = "No alert with this id in your project."
HISTORY_SHOWN = 50


def _not_found(pointer: str, what: str) -> NotFound:
    detail = f"No {what} with this id in your project."
    return NotFound(detail, [FieldError(pointer=pointer, detail=detail)])


def _source_id(raw: str, pointer: str, what: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise _not_found(pointer, what) from None


async def _source(
    platform: Platform, project_id: UUID, posted: AlertCreate
) -> tuple[UUID | None, UUID | None]:
    """The rule or the dataset the alert watches; NotFound naming the field when it is not
    the project's."""
    source = posted.source
    if (source.rule_id is None) == (source.dataset_id is None):
        detail = "Give the source one of rule_id or dataset_id."
        raise InvalidInput(
            "The alert is not valid.", [FieldError(pointer="/source", detail=detail)]
        )
    if source.rule_id is not None:
        rule_id = _source_id(source.rule_id, "/source/rule_id", "trace rule")
        rule = await rule_rows.get_rule(platform.pool, project_id, rule_id)
        if rule is None:
            raise _not_found("/source/rule_id", "trace rule")
        _check_of_rule(posted, [check.id or "" for check in rule.content.checks or ()])
        return rule_id, None
    assert source.dataset_id is not None
    dataset_id = _source_id(source.dataset_id, "/source/dataset_id", "dataset")
    if await dataset_rows.get_dataset(platform.pool, project_id, dataset_id) is None:
        raise _not_found("/source/dataset_id", "dataset")
    return None, dataset_id


def _check_of_rule(posted: AlertCreate, check_ids: list[str]) -> None:
    """A check_fail_rate alert on a rule names one of the rule's checks."""
    if posted.metric == "check_fail_rate" and posted.check_id not in check_ids:
        detail = f"The rule has no check {posted.check_id!r}; its checks: {', '.join(check_ids)}."
        raise InvalidInput(
            "The alert is not valid.", [FieldError(pointer="/check_id", detail=detail)]
        )


async def _problems(platform: Platform, posted: AlertCreate) -> list[FieldError]:
    problems = [
        FieldError(pointer=pointer, detail=detail)
        for pointer, detail in level_problems(posted.warn, posted.alert, posted.metric)
    ]
    if (posted.metric == "check_fail_rate") != (posted.check_id is not None):
        detail = "check_id names the check a check_fail_rate alert counts, and only then."
        problems.append(FieldError(pointer="/check_id", detail=detail))
    reason = await check_agent_url(
        posted.webhook_url, allow_private=platform.settings.allow_private_agents
    )
    if reason:
        detail = reason.replace("the agent URL", "the webhook URL")
        problems.append(FieldError(pointer="/webhook_url", detail=detail[:1].upper() + detail[1:]))
    return problems


async def create_alert(
    platform: Platform, project_id: UUID, posted: AlertCreate, caller: Caller
) -> Alert:
    """Store an alert; the workers evaluate it at once, then on their schedule."""
    problems = await _problems(platform, posted)
    if problems:
        raise InvalidInput("The alert is not valid.", problems)
    rule_id, dataset_id = await _source(platform, project_id, posted)
    alert_id = uuid.uuid4()
    alert = Alert(
        id=alert_id, project_id=project_id, name=posted.name, rule_id=rule_id,
        dataset_id=dataset_id, metric=posted.metric, check_id=posted.check_id,
        window_s=posted.window_s, warn=posted.warn, alert=posted.alert,
        min_samples=posted.min_samples, webhook_url=posted.webhook_url,
        sealed_secret=seal(platform.secret_key, posted.webhook_secret.encode(), alert_id.bytes),
        created_at=datetime.now(UTC),
    )  # fmt: skip
    async with platform.pool.acquire() as connection, connection.transaction():
        stored = await alert_rows.insert_alert(connection, alert)
        await audit.record(
            connection, project_id, caller, "alert.created", audit.about("alert", alert_id),
            name=stored.name, metric=stored.metric,
        )  # fmt: skip
    return stored


async def list_alerts(platform: Platform, project_id: UUID) -> list[Alert]:
    """The project's alerts, newest first."""
    return await alert_rows.list_alerts(platform.pool, project_id)


async def alerts_of_rule(platform: Platform, rule: TraceRule) -> list[Alert]:
    """The alerts watching a trace rule (the rule is the caller's project's)."""
    return await alert_rows.alerts_of_rule(platform.pool, rule.id)


async def get_alert(platform: Platform, project_id: UUID, alert_id: UUID) -> Alert:
    """One of the project's alerts; NotFound for any other."""
    alert = await alert_rows.get_alert(platform.pool, project_id, alert_id)
    if alert is None:
        raise NotFound(NO_ALERT)
    return alert


async def history(platform: Platform, alert: Alert) -> list[AlertEvent]:
    """The alert's latest changes of state and their deliveries, newest first."""
    rows = await alert_rows.events_of(platform.pool, alert.id, HISTORY_SHOWN)
    return [msgspec.convert(dict(row), AlertEvent) for row in rows]


async def delete_alert(
    platform: Platform, project_id: UUID, alert_id: UUID, caller: Caller
) -> None:
    """Delete an alert and its history."""
    async with platform.pool.acquire() as connection, connection.transaction():
        name = await alert_rows.delete_alert(connection, project_id, alert_id)
        if name is None:
            raise NotFound(NO_ALERT)
        await audit.record(
            connection, project_id, caller, "alert.deleted", audit.about("alert", alert_id),
            name=name,
        )  # fmt: skip


async def send_test(platform: Platform, alert: Alert) -> TestDelivery:
    """Post a test body to the webhook, signed as a real change would be, once."""
    body = test_payload(alert, datetime.now(UTC), platform.settings.public_url)
    outcome = await post_signed(platform.agent_client, platform.secret_key, alert, body, "test")
    if isinstance(outcome, int):
        delivered = 200 <= outcome < 300
        error = None if delivered else f"The webhook answered {outcome}."
        return TestDelivery(delivered=delivered, status=outcome, error=error)
    return TestDelivery(delivered=False, status=None, error=outcome)
