"""The demo `agentlasso dev` seeds: every deterministic check type, and exactly one failure."""

from __future__ import annotations

import msgspec

from agentlasso.devstack.demo import DEMO_CASES, DEMO_TOOLS, demo_reply
from agentlasso.domain.checks import CHECK_TYPES
from agentlasso.domain.declared_tools import declared_tools
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case, observation_from_wire
from agentlasso.services.test_cases import prepare_content


def grade(case_input: str, checks: list[dict[str, object]]) -> tuple[bool, str]:
    content = prepare_content(
        msgspec.convert({"input": case_input, "checks": checks}, TestCaseContent)
    )
    reply = demo_reply(case_input)
    # As a server-mode run grades it: the bot's declared tools, and the call timed (the bot
    # answers from a table, well within any budget).
    observation = observation_from_wire(reply["output"], reply["tool_calls"], latency_ms=20)
    result = grade_case(content, observation, declared_tools=declared_tools(DEMO_TOOLS))
    return result.pass_fail, result.judge_reasoning


def test_the_demo_has_about_twenty_cases_using_every_deterministic_check_type() -> None:
    used = {check["type"] for case in DEMO_CASES for check in case.checks}
    assert used == set(CHECK_TYPES) - {"llm_judge"}
    assert 18 <= len(DEMO_CASES) <= 25
    assert len({case.input for case in DEMO_CASES}) == len(DEMO_CASES)


def test_the_demo_bot_passes_every_case_but_the_one_that_fails_on_purpose() -> None:
    outcomes = {case.description: grade(case.input, case.checks) for case in DEMO_CASES}
    failed = {name: why for name, (passed, why) in outcomes.items() if not passed}
    assert list(failed) == ["tracking must not promise dates"]
    assert "output_not_contains" in failed["tracking must not promise dates"]


def test_the_demo_bot_answers_unknown_input_without_tools() -> None:
    assert demo_reply("hello?") == {
        "output": "I can help with orders, refunds and shipping.",
        "tool_calls": [],
    }
    assert demo_reply({"structured": True})["tool_calls"] == []
