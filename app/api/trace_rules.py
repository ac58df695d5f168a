"""/api/v1/trace-rules: checks the workers apply to production traces (contract section 18)."""

from __future__ import annotations

from litestar import Controller, delete, get, post
from litestar.params import FromPath, JSONBody

from agentlasso.domain import trace_rules as domain
from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.trace_rules import (
    RecentFailure,
    RuleStats,
    TraceEvaluation,
    TraceRule,
    TraceRuleCreate,
    TraceRulePage,
)
from agentlasso.services import trace_rules as service


def rule_out(
    rule: domain.TraceRule,
    stats: RuleStats | None = None,
    failures: list[domain.Evaluation] | None = None,
) -> TraceRule:
    """The API shape of a rule (with what it graded, when read alone)."""
    content = rule.content
    return TraceRule(
        id=str(rule.id), name=rule.name, filter=rule.filter, sample_rate=rule.sample_rate,
        checks=content.checks or (), expected_output=content.expected_output,
        evaluation_type=content.evaluation_type, min_confidence=content.min_confidence,
        daily_judge_budget_usd=rule.daily_judge_budget_usd, backfill_hours=rule.backfill_hours,
        created_at=rule.created_at, stats=stats,
        recent_failures=None if failures is None else [
            RecentFailure(
                trace_id=failure.trace_id, graded_at=failure.graded_at,
                judge_reasoning=failure.result.judge_reasoning,
            )
            for failure in failures
        ],
    )  # fmt: skip


def evaluation_out(evaluation: domain.Evaluation) -> TraceEvaluation:
    """The API shape of a rule's grade of a trace."""
    result = evaluation.result
    return TraceEvaluation(
        rule_id=str(evaluation.rule_id), rule_name=evaluation.rule_name, outcome=result.outcome,
        graded=result.graded, pass_fail=result.pass_fail, score=result.score,
        judge_reasoning=result.judge_reasoning, check_results=result.check_results,
        span_count=evaluation.span_count, times_graded=evaluation.times_graded,
        graded_at=evaluation.graded_at, judge_cost_usd=round(evaluation.judge_cost_usd, 6),
    )  # fmt: skip


class TraceRuleController(Controller):
    """The project's trace rules."""

    path = "/trace-rules"
    tags = ("traces",)

    @post(operation_id="createTraceRule")
    async def create(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        data: JSONBody[TraceRuleCreate],
    ) -> TraceRule:
        """Grade the project's production traces that match the filter, once each is quiet."""
        return rule_out(await service.create_rule(platform, project_id, data, caller))

    @get(operation_id="listTraceRules")
    async def list(self, platform: PlatformDep, project_id: ProjectId) -> TraceRulePage:
        """The project's trace rules, newest first."""
        rules = await service.list_rules(platform, project_id)
        return TraceRulePage(trace_rules=[rule_out(rule) for rule in rules])

    @get("/{rule_id:str}", operation_id="getTraceRule")
    async def read(
        self, platform: PlatformDep, project_id: ProjectId, rule_id: FromPath[str]
    ) -> TraceRule:
        """A rule, what it graded (each trace's latest grade) and its recent failures."""
        rule = await service.get_rule(platform, project_id, parse_id(rule_id, "trace rule"))
        stats = await service.rule_stats(platform, rule)
        return rule_out(rule, stats, await service.recent_failures(platform, rule))

    @delete("/{rule_id:str}", operation_id="deleteTraceRule")
    async def remove(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        rule_id: FromPath[str],
    ) -> None:
        """Delete a rule and its grades."""
        await service.delete_rule(platform, project_id, parse_id(rule_id, "trace rule"), caller)
