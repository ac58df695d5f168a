"""/api/v1/alerts: a metric of a trace rule or a dataset's runs, posted to a webhook as its
state changes (contract section 18)."""

from __future__ import annotations

from litestar import Controller, delete, get, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain import alerts as domain
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.alerts import (
    Alert,
    AlertCreate,
    AlertEvent,
    AlertPage,
    AlertSource,
    TestDelivery,
)
from agentlasso.services import alerts as service


def alert_out(alert: domain.Alert, history: list[AlertEvent] | None = None) -> Alert:
    """The API shape of an alert: never its webhook's secret."""
    source = AlertSource(
        rule_id=None if alert.rule_id is None else str(alert.rule_id),
        dataset_id=None if alert.dataset_id is None else str(alert.dataset_id),
    )
    return Alert(
        id=str(alert.id), name=alert.name, source=source, metric=alert.metric,
        check_id=alert.check_id, window_s=alert.window_s, warn=alert.warn, alert=alert.alert,
        min_samples=alert.min_samples, webhook_url=alert.webhook_url,
        created_at=alert.created_at, state=alert.state, state_since=alert.state_since,
        value=alert.last_value, samples=alert.last_samples, evaluated_at=alert.evaluated_at,
        history=history,
    )  # fmt: skip


class AlertController(Controller):
    """The project's alerts."""

    path = "/alerts"
    tags = ("traces",)

    @post(operation_id="createAlert")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        data: JSONBody[AlertCreate],
    ) -> Alert:
        """Watch a metric; each change of its state is posted, signed, to the webhook (whose
        URL passes the same address guard as agents')."""
        return alert_out(await service.create_alert(platform, project_id, data, caller))

    @get(operation_id="listAlerts")
    async def list(self, platform: PlatformDep, project_id: ProjectId) -> AlertPage:
        """The project's alerts, newest first, each with its state."""
        alerts = await service.list_alerts(platform, project_id)
        return AlertPage(alerts=[alert_out(alert) for alert in alerts])

    @get("/{alert_id:str}", operation_id="getAlert")
    async def read(
        self, platform: PlatformDep, project_id: ProjectId, alert_id: FromPath[str]
    ) -> Alert:
        """An alert, its state and its history of changes (newest first, with each post's
        delivery)."""
        alert = await service.get_alert(platform, project_id, parse_id(alert_id, "alert"))
        return alert_out(alert, await service.history(platform, alert))

    @delete("/{alert_id:str}", operation_id="deleteAlert")
    async def remove(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        alert_id: FromPath[str],
    ) -> None:
        """Delete an alert and its history."""
        await service.delete_alert(platform, project_id, parse_id(alert_id, "alert"), caller)

    @post("/{alert_id:str}/test", operation_id="testAlert", status_code=200)
    async def test(
        self, platform: PlatformDep, project_id: ProjectId, alert_id: FromPath[str]
    ) -> TestDelivery:
        """Post a test body (event alert.test) to the webhook once, signed, and say how it
        went."""
        alert = await service.get_alert(platform, project_id, parse_id(alert_id, "alert"))
        return await service.send_test(platform, alert)
