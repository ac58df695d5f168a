"""Trace rules on production traces (contract section 18): the real OpenTelemetry SDK exports an
agent's turns to an `agentlasso api` process, real worker processes read them and grade them by
the project's rules once they are quiet, and the judge is the fake Anthropic API."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.support.databases import new_project_key
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.production_traces import agent_turn, late_tool_span, production_tracer
from tests.support.waiting import eventually
from tests.support.watching import WatchedPlatform

TRACKING = "Where is my order 77?"
SHIPPED = "Order 77 left on Tuesday and arrives Thursday."
PROMISE = "Order 77 will definitely arrive tomorrow, I promise."
RULE_CHECKS = [
    {"type": "tool_called", "tool": "orders.track", "severity": "critical"},
    {"type": "output_not_contains", "value": "I promise", "severity": "critical"},
]


def by_id(evaluation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["id"]: check for check in evaluation["check_results"]}


async def test_a_quiet_trace_is_graded_by_the_rule_and_shows_why(watching: WatchedPlatform) -> None:
    rule = await watching.rule(name="Tracks before answering", checks=RULE_CHECKS)
    with production_tracer(watching.url, watching.key) as tracer:
        good = agent_turn(tracer, TRACKING, SHIPPED, ["orders.track"])
        bad = agent_turn(tracer, TRACKING, PROMISE, [])
    passed, failed = await watching.graded(good), await watching.graded(bad)
    assert (passed["rule_name"], passed["outcome"]) == ("Tracks before answering", "passed")
    assert failed["outcome"] == "failed"
    tool, promise = (by_id(failed)[check["id"]] for check in rule["checks"])
    assert (tool["status"], promise["status"]) == ("failed", "failed")
    assert "orders.track" in tool["detail"]
    assert "I promise" in promise["detail"]
    assert passed["times_graded"] == failed["times_graded"] == 1
    read = (await watching.http.get(f"/api/v1/trace-rules/{rule['id']}")).json()
    assert read["stats"] | {"judge_cost_usd_today": 0} == {
        "evaluated": 2, "passed": 1, "failed": 1, "not_graded": 0, "pass_rate": 0.5,
        "judge_cost_usd_today": 0,
    }  # fmt: skip
    assert [failure["trace_id"] for failure in read["recent_failures"]] == [bad]


async def test_a_filter_grades_only_the_traces_it_matches(watching: WatchedPlatform) -> None:
    await watching.rule(
        name="Refund errors", checks=RULE_CHECKS,
        filter={"tool": "orders.refund", "errors_only": True,
                "attributes": {"service.name": "support-bot"}},
    )  # fmt: skip
    with production_tracer(watching.url, watching.key) as tracer:
        matching = agent_turn(tracer, TRACKING, SHIPPED, ["orders.refund"], error="refund failed")
        no_error = agent_turn(tracer, TRACKING, SHIPPED, ["orders.refund"])
        other_tool = agent_turn(tracer, TRACKING, SHIPPED, ["orders.track"], error="timeout")
    with production_tracer(watching.url, watching.key, service="billing-bot") as tracer:
        other_service = agent_turn(tracer, TRACKING, SHIPPED, ["orders.refund"], error="failed")
    assert (await watching.graded(matching))["outcome"] == "failed"
    # Graded in the same rounds as the one that matched: none of the others is, after a while.
    await asyncio.sleep(3)
    for trace_id in (no_error, other_tool, other_service):
        assert await watching.evaluations(trace_id) == []


async def test_a_lower_sample_rate_grades_a_subset_of_a_higher_ones_traces(
    watching: WatchedPlatform,
) -> None:
    with production_tracer(watching.url, watching.key) as tracer:
        traces = [agent_turn(tracer, TRACKING, SHIPPED, ["orders.track"]) for _ in range(100)]
    # Rules made after the traces arrived, reaching back for them.
    every = await watching.rule(name="All", checks=RULE_CHECKS, backfill_hours=1)
    tenth = await watching.rule(name="Tenth", checks=RULE_CHECKS, sample_rate=0.1, backfill_hours=1)
    tenth_again = await watching.rule(
        name="Tenth again", checks=RULE_CHECKS, sample_rate=0.1, backfill_hours=1
    )
    third = await watching.rule(name="Third", checks=RULE_CHECKS, sample_rate=0.3, backfill_hours=1)

    async def every_trace_graded() -> bool:
        # One request a poll: polling each trace would run into the project's rate limit.
        read = await watching.http.get(f"/api/v1/trace-rules/{every['id']}")
        return bool(read.json()["stats"]["evaluated"] == len(traces))

    await eventually(every_trace_graded, timeout_s=60)
    await asyncio.sleep(3)  # every rule's rounds have passed these traces by now
    graded: dict[str, set[str]] = {}
    for trace_id in traces:
        for evaluation in await watching.evaluations(trace_id):
            graded.setdefault(evaluation["rule_id"], set()).add(trace_id)
    assert graded[every["id"]] == set(traces)
    tenths, thirds = graded.get(tenth["id"], set()), graded.get(third["id"], set())
    assert tenths == graded.get(tenth_again["id"], set()), "the same traces, rule after rule"
    assert tenths <= thirds
    assert 1 <= len(tenths) <= 25 and len(tenths) < len(thirds) < 60


async def test_a_late_span_grades_the_trace_again(watching: WatchedPlatform) -> None:
    await watching.rule(name="Tracks", checks=RULE_CHECKS[:1])
    with production_tracer(watching.url, watching.key) as tracer:
        trace_id = agent_turn(tracer, TRACKING, SHIPPED, [])
        first = await watching.graded(trace_id)
        late_tool_span(tracer, trace_id, "orders.track")
    again = await watching.graded(trace_id, times=2)
    assert (first["outcome"], again["outcome"]) == ("failed", "passed")
    assert again["span_count"] == first["span_count"] + 1
    await asyncio.sleep(2.5)  # nothing new arrived: not graded a third time
    assert (await watching.graded(trace_id))["times_graded"] == 2


async def test_a_spent_judge_budget_leaves_judge_checks_not_graded_and_the_rest_go_on(
    watching: WatchedPlatform, anthropic: FakeAnthropic
) -> None:
    rule = await watching.rule(
        name="Judged", daily_judge_budget_usd=0.000001,
        checks=[*RULE_CHECKS[:1], {"type": "llm_judge", "criterion": "Gives a delivery day"}],
    )  # fmt: skip
    with production_tracer(watching.url, watching.key) as tracer:
        first = await watching.graded(agent_turn(tracer, TRACKING, SHIPPED, ["orders.track"]))
        later = [agent_turn(tracer, TRACKING, SHIPPED, tools) for tools in ([], ["orders.track"])]
    tool_id, judge_id = (check["id"] for check in rule["checks"])
    assert by_id(first)[judge_id]["status"] == "passed"
    assert first["judge_cost_usd"] > 0
    asked = len(anthropic.requests)
    for trace_id, tool_status in zip(later, ("failed", "passed"), strict=True):
        checks = by_id(await watching.graded(trace_id))
        assert checks[tool_id]["status"] == tool_status
        assert checks[judge_id]["status"] == "not_graded"
        assert "daily judge budget ($0.00) is spent" in checks[judge_id]["detail"]
    assert len(anthropic.requests) == asked, "no judge call once the budget is spent"
    read = (await watching.http.get(f"/api/v1/trace-rules/{rule['id']}")).json()
    assert read["stats"]["judge_cost_usd_today"] == pytest.approx(first["judge_cost_usd"])


async def test_another_projects_key_finds_no_rule(
    watching: WatchedPlatform, settings: Settings
) -> None:
    rule = await watching.rule(name="Mine", checks=RULE_CHECKS)
    other = await new_project_key(settings.database_url)
    async with httpx.AsyncClient(base_url=watching.url, headers={"x-api-key": other}) as http:
        assert (await http.get(f"/api/v1/trace-rules/{rule['id']}")).status_code == 404
        assert (await http.delete(f"/api/v1/trace-rules/{rule['id']}")).status_code == 404
        assert (await http.get("/api/v1/trace-rules")).json() == {"trace_rules": []}
    assert (await watching.http.get(f"/api/v1/trace-rules/{rule['id']}")).status_code == 200


async def test_a_conversations_traces_are_graded_as_one_conversation(
    watching: WatchedPlatform,
) -> None:
    # Looking the order up, then refunding it, in two turns: only the whole conversation
    # calls both, in this order.
    rule = await watching.rule(
        name="Refunds after a lookup",
        checks=[{"type": "tool_order", "tools": ["orders.lookup", "orders.refund"]}],
    )
    with production_tracer(watching.url, watching.key, held=True) as tracer:
        first = agent_turn(tracer, "Refund order 77", "Let me look.", ["orders.lookup"],
                           conversation_id="chat-77")  # fmt: skip
        last = agent_turn(tracer, "Yes, refund it", "Refunded.", ["orders.refund"],
                          conversation_id="chat-77")  # fmt: skip
        single = agent_turn(tracer, "Refund order 78", "Refunded.", ["orders.refund"])
    graded = await watching.graded(last)
    assert graded["outcome"] == "passed", graded
    assert (await watching.graded(single))["outcome"] == "failed"
    assert await watching.evaluations(first) == [], "the grade is kept on the latest turn"
    trace_spans = [
        (await watching.http.get(f"/api/v1/traces/{t}")).json()["span_count"] for t in (first, last)
    ]
    assert graded["span_count"] == sum(trace_spans), "versioned by all the turns' spans"
    read = (await watching.http.get(f"/api/v1/trace-rules/{rule['id']}")).json()
    assert (read["stats"]["evaluated"], read["stats"]["passed"]) == (2, 1)
