"""Trace rules: writing them, reading what they graded (contract section 18)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from uuid import UUID

import msgspec

from agentlasso.db import trace_rules as rule_rows
from agentlasso.domain.audit import Caller
from agentlasso.domain.checks import assign_check_ids
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.trace_rules import Evaluation, TraceRule
from agentlasso.errors import InvalidInput, NotFound
from agentlasso.schemas.trace_rules import RuleStats, TraceRuleCreate
from agentlasso.services import audit
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import content_problems

NO_RULE = "No trace rule with this id in your project."
RECENT_FAILURES = 20


def rule_content(posted: TraceRuleCreate) -> TestCaseContent:
    """What a trace is graded against, as a case's content (its check ids assigned);
    InvalidInput naming the field when the checks cannot be used."""
    content = TestCaseContent(
        # The trace's input takes this place when it is graded.
        input="",
        checks=tuple(posted.checks),
        expected_output=posted.expected_output,
        evaluation_type=posted.evaluation_type,
        min_confidence=posted.min_confidence,
    )
    problems = [problem for problem in content_problems(content) if problem.pointer != "/input"]
    if problems:
        raise InvalidInput("The trace rule is not valid.", problems)
    assert content.checks is not None
    return msgspec.structs.replace(content, checks=assign_check_ids(content.checks))


async def create_rule(
    platform: Platform, project_id: UUID, posted: TraceRuleCreate, caller: Caller
) -> TraceRule:
    """Store a rule: the workers grade the traces it matches from now (or its backfill) on."""
    rule = TraceRule(
        id=uuid.uuid4(), project_id=project_id, name=posted.name, filter=posted.filter,
        sample_rate=posted.sample_rate, content=rule_content(posted),
        daily_judge_budget_usd=posted.daily_judge_budget_usd,
        backfill_hours=posted.backfill_hours, created_at=datetime.now(UTC),
    )  # fmt: skip
    async with platform.pool.acquire() as connection, connection.transaction():
        stored = await rule_rows.insert_rule(connection, rule)
        await audit.record(
            connection, project_id, caller, "trace_rule.created",
            audit.about("trace_rule", stored.id), name=stored.name,
            sample_rate=str(stored.sample_rate),
        )  # fmt: skip
    return stored


async def list_rules(platform: Platform, project_id: UUID) -> list[TraceRule]:
    """The project's rules, newest first."""
    return await rule_rows.list_rules(platform.pool, project_id)


async def get_rule(platform: Platform, project_id: UUID, rule_id: UUID) -> TraceRule:
    """One of the project's rules; NotFound for any other."""
    rule = await rule_rows.get_rule(platform.pool, project_id, rule_id)
    if rule is None:
        raise NotFound(NO_RULE)
    return rule


async def delete_rule(platform: Platform, project_id: UUID, rule_id: UUID, caller: Caller) -> None:
    """Delete a rule and what it graded."""
    async with platform.pool.acquire() as connection, connection.transaction():
        name = await rule_rows.delete_rule(connection, project_id, rule_id)
        if name is None:
            raise NotFound(NO_RULE)
        await audit.record(
            connection, project_id, caller, "trace_rule.deleted",
            audit.about("trace_rule", rule_id), name=name,
        )  # fmt: skip


async def rule_stats(platform: Platform, rule: TraceRule) -> RuleStats:
    """What the rule graded: each trace's latest grade counted once."""
    counts = await rule_rows.rule_counts(platform.pool, rule.id)
    today = datetime.now(UTC).date()
    spent = await rule_rows.spent_on(platform.pool, rule.id, today)
    decided = counts["passed"] + counts["failed"]
    return RuleStats(
        evaluated=counts["evaluated"], passed=counts["passed"], failed=counts["failed"],
        not_graded=counts["not_graded"],
        pass_rate=None if decided == 0 else counts["passed"] / decided,
        judge_cost_usd_today=round(spent, 6),
    )  # fmt: skip


async def recent_failures(platform: Platform, rule: TraceRule) -> list[Evaluation]:
    """The rule's latest failed traces, newest first."""
    return await rule_rows.recent_failures(platform.pool, rule.id, RECENT_FAILURES)


async def evaluations_of_trace(
    platform: Platform, project_id: UUID, trace_id: str
) -> list[Evaluation]:
    """Every rule's latest grade of one of the project's traces."""
    return await rule_rows.evaluations_of_trace(platform.pool, project_id, trace_id)


async def pass_rate_by_hour(
    platform: Platform, rule: TraceRule, hours: int
) -> list[tuple[datetime, int, int]]:
    """The rule's passed and graded traces per hour, over the last `hours`."""
    return await rule_rows.pass_rate_by_hour(platform.pool, rule.id, timedelta(hours=hours))
