"""Watching production (contract section 18): the project's trace rules and alerts, a rule's
page (what it grades, its pass rate over time, its recent failures) and an alert's (its state,
its history of changes and their deliveries, and Send test)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath

from agentlasso.domain.alerts import Alert
from agentlasso.domain.checks import PRODUCT_NAMES, type_of
from agentlasso.domain.trace_rules import TraceFilter, TraceRule
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.alerts import TestDelivery
from agentlasso.services import alerts as alert_service
from agentlasso.services import trace_rules as rule_service
from agentlasso.web.charts import rate_chart
from agentlasso.web.rendering import page
from agentlasso.web.sessions import session_of

# A rule's page draws its pass rate over this many hours, an hour a column.
CHART_HOURS = 48


def filter_words(rule_filter: TraceFilter) -> str:
    """A rule's filter as a person reads it."""
    parts = []
    if rule_filter.name is not None:
        parts.append(f"named “{rule_filter.name}”")
    if rule_filter.tool is not None:
        parts.append(f"calling {rule_filter.tool}")
    if rule_filter.errors_only:
        parts.append("with an error")
    parts += [f"{key} = “{value}”" for key, value in rule_filter.attributes.items()]
    return "Every trace" if not parts else "Traces " + ", ".join(parts)


def level_words(alert: Alert) -> str:
    """An alert's levels as a person reads them."""
    said = f"alert {alert.alert.words()}"
    return said if alert.warn is None else f"warn {alert.warn.words()}, {said}"


def _hourly_points(hours: list[tuple[datetime, int, int]]) -> list[tuple[str, int, int]]:
    """Every hour of the chart's span, oldest first, those with nothing graded at 0 of 0."""
    by_hour = {hour: (passed, graded) for hour, passed, graded in hours}
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    points = []
    for back in range(CHART_HOURS - 1, -1, -1):
        hour = now - timedelta(hours=back)
        passed, graded = by_hour.get(hour, (0, 0))
        points.append((hour.strftime("%d %b %H:00"), passed, graded))
    return points


class RulePages(Controller):
    """Trace rules and alerts in the web app."""

    @get("/trace-rules", name="trace_rules")
    async def rules(self, request: Request[Any, Any, Any], platform: PlatformDep) -> Response[Any]:
        """The project's trace rules with what each graded, and its alerts with their states."""
        project_id = session_of(request).project_id
        rules = await rule_service.list_rules(platform, project_id)
        stats = {rule.id: await rule_service.rule_stats(platform, rule) for rule in rules}
        alerts = await alert_service.list_alerts(platform, project_id)
        names = {rule.id: rule.name for rule in rules}
        return page(
            request, "trace_rules.html", rules=rules, stats=stats, alerts=alerts,
            rule_names=names, filter_words=filter_words, level_words=level_words,
        )  # fmt: skip

    @get("/trace-rules/{rule_id:str}", name="trace_rule")
    async def rule(
        self, request: Request[Any, Any, Any], platform: PlatformDep, rule_id: FromPath[str]
    ) -> Response[Any]:
        """A rule: its filter and checks, its pass rate by hour, its recent failures and the
        alerts watching it."""
        project_id = session_of(request).project_id
        rule = await rule_service.get_rule(platform, project_id, parse_id(rule_id, "trace rule"))
        hours = await rule_service.pass_rate_by_hour(platform, rule, CHART_HOURS)
        chart = rate_chart(
            f"Pass rate by hour, last {CHART_HOURS} hours", _hourly_points(hours),
            point_name="Hour", chart_id="rule-pass-rate",
        )  # fmt: skip
        return page(
            request, "trace_rule.html", rule=rule, chart=chart,
            stats=await rule_service.rule_stats(platform, rule),
            failures=await rule_service.recent_failures(platform, rule),
            alerts=await alert_service.alerts_of_rule(platform, rule),
            filter_words=filter_words(rule.filter), level_words=level_words,
            checks=[
                (PRODUCT_NAMES.get(type_of(type(check)), ""), check.id, check.detail())
                for check in rule.content.checks or ()
            ],
        )  # fmt: skip

    @get("/alerts/{alert_id:str}", name="alert")
    async def alert(
        self, request: Request[Any, Any, Any], platform: PlatformDep, alert_id: FromPath[str]
    ) -> Response[Any]:
        """An alert: its state, its levels, its history and Send test."""
        return await _alert_page(request, platform, alert_id, None)

    @post("/alerts/{alert_id:str}/test", name="test_alert")
    async def test(
        self, request: Request[Any, Any, Any], platform: PlatformDep, alert_id: FromPath[str]
    ) -> Response[Any]:
        """Post a signed test body to the webhook once; the page says how it went."""
        project_id = session_of(request).project_id
        alert = await alert_service.get_alert(platform, project_id, parse_id(alert_id, "alert"))
        outcome = await alert_service.send_test(platform, alert)
        return await _alert_page(request, platform, alert_id, outcome)


async def _alert_page(
    request: Request[Any, Any, Any], platform: Any, alert_id: str, tested: TestDelivery | None
) -> Response[Any]:
    project_id = session_of(request).project_id
    alert = await alert_service.get_alert(platform, project_id, parse_id(alert_id, "alert"))
    source: TraceRule | None = None
    if alert.rule_id is not None:
        source = await rule_service.get_rule(platform, project_id, alert.rule_id)
    return page(
        request, "alert.html", alert=alert, rule=source, tested=tested,
        history=await alert_service.history(platform, alert), level_words=level_words(alert),
    )  # fmt: skip
