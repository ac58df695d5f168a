"""output_equals, max_tool_calls and latency_below (contract section 17), on a single-turn
case and in a conversation (per turn, and per conversation with `total`)."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.domain.checks import Check, LatencyBelow, MaxToolCalls, OutputEquals
from agentlasso.domain.conversations import (
    Conversation,
    PlayedConversation,
    ScriptedTurn,
    TurnRecord,
)
from agentlasso.domain.grades import CheckResult
from agentlasso.domain.test_cases import TestCaseContent, with_conversation_ids
from agentlasso.grading import grade_case, observation_from_wire
from agentlasso.grading.conversation import grade_conversation


def grade_one(
    check: Check, reply: str | None = "reply", calls: Any = (), **kwargs: Any
) -> CheckResult:
    observation = observation_from_wire(
        reply, list(calls), output_reported=reply is not None, **kwargs
    )
    return grade_case(TestCaseContent(input="q", checks=(check,)), observation).check_results[0]


@pytest.mark.parametrize(
    ("check", "reply", "passed", "detail"),
    [
        (OutputEquals(value="42"), " 42\n", True, 'The reply equals "42".'),
        (OutputEquals(value="Paris"), "PARIS", True, 'The reply equals "Paris".'),
        (OutputEquals(value="Straße"), "STRASSE", True, 'The reply equals "Straße".'),
        (OutputEquals(value="42"), "43", False, 'The reply does not equal "42": it was "43".'),
        (
            OutputEquals(value="4200"),
            "4210",
            False,
            'The reply does not equal "4200": it was "4210".',
        ),
        (OutputEquals(value="42"), "421", False, 'The reply does not equal "42": it was "421".'),
        (
            OutputEquals(value="Paris", ignore_case=False),
            "paris",
            False,
            'The reply does not equal "Paris": it was "paris". Only the letter case differs '
            "(ignore_case is off).",
        ),
        (
            OutputEquals(value="42", trim=False),
            "42 ",
            False,
            'The reply does not equal "42": it was "42 ". Only the whitespace around it differs '
            "(trim is off).",
        ),
        (OutputEquals(value=""), "  ", True, 'The reply equals "".'),
        (
            OutputEquals(value="ok"),
            None,
            False,
            "The reply was not reported, so this check cannot be verified.",
        ),
    ],
)
def test_output_equals(check: Check, reply: str | None, passed: bool, detail: str) -> None:
    result = grade_one(check, reply)
    assert (result.passed, result.detail) == (passed, detail)


def test_a_long_reply_is_quoted_short_and_says_where_it_differs() -> None:
    result = grade_one(OutputEquals(value="x" * 4_000), "x" * 3_000 + "y" * 1_000)
    assert result.passed is False
    assert len(result.detail) < 300
    assert result.detail.endswith("(they differ from character 3001).")
    assert grade_one(OutputEquals(value="short"), "y" * 5_000).detail.endswith('...".')


def named(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": {}} for name in names]


@pytest.mark.parametrize(
    ("check", "calls", "passed", "detail"),
    [
        (
            MaxToolCalls(count=3),
            named("a", "b"),
            True,
            "The agent made 2 tool calls; at most 3 allowed.",
        ),
        (MaxToolCalls(count=1), named("a"), True, "The agent made 1 tool call; at most 1 allowed."),
        (MaxToolCalls(count=0), [], True, "The agent made 0 tool calls; at most 0 allowed."),
        (
            MaxToolCalls(count=2),
            named("a", "b", "a"),
            False,
            "The agent made 3 tool calls; at most 2 allowed. The agent called: a, b, a.",
        ),
        (
            MaxToolCalls(count=1, tool="a"),
            named("a", "b", "b"),
            True,
            "The agent made 1 call of a; at most 1 allowed.",
        ),
        (
            MaxToolCalls(count=1, tool="a"),
            named("a", "b", "a"),
            False,
            "The agent made 2 calls of a; at most 1 allowed. The agent called: a, b, a.",
        ),
        (
            MaxToolCalls(count=2),
            [*named("a"), 7],
            False,
            "Cannot confirm the agent made at most 2 tool calls. Could not read every reported "
            "tool call: entry 2 is a number, not an object.",
        ),
    ],
)
def test_max_tool_calls(check: Check, calls: Any, passed: bool, detail: str) -> None:
    result = grade_one(check, calls=calls)
    assert (result.passed, result.detail) == (passed, detail)


def test_max_tool_calls_fails_when_the_calls_were_not_reported() -> None:
    observation = observation_from_wire("r", None, tool_calls_reported=False)
    content = TestCaseContent(input="q", checks=(MaxToolCalls(count=3),))
    result = grade_case(content, observation).check_results[0]
    assert (result.status, result.detail) == (
        "failed",
        "The tool calls were not reported, so this check cannot be verified.",
    )


@pytest.mark.parametrize(
    ("latency_ms", "status", "detail"),
    [
        (1500, "passed", "The agent answered in 1,500 ms, within the 2,000 ms allowed."),
        (2000, "passed", "The agent answered in 2,000 ms, within the 2,000 ms allowed."),
        (2001, "failed", "The agent answered in 2,001 ms, over the 2,000 ms allowed."),
        (
            None,
            "not_graded",
            "The agent call's latency was not reported (a CI client posts latency_ms), so this "
            "check cannot be graded.",
        ),
    ],
)
def test_latency_below(latency_ms: int | None, status: str, detail: str) -> None:
    result = grade_one(LatencyBelow(id="c1", ms=2000), latency_ms=latency_ms)
    assert (result.status, result.detail) == (status, detail)


def test_latency_below_fails_with_the_agent_error() -> None:
    result = grade_one(LatencyBelow(ms=2000), agent_error="the agent call timed out after 30 s")
    assert (result.status, result.detail) == ("failed", "The agent call timed out after 30 s.")


def conversation(turn_check: Check | None, own: Check) -> TestCaseContent:
    turns = tuple(
        ScriptedTurn(user=f"u{n}", checks=(turn_check,) if turn_check and n == 2 else ())
        for n in (1, 2, 3)
    )
    return with_conversation_ids(
        TestCaseContent(conversation=Conversation(turns=turns), checks=(own,))
    )


def played(*latencies: int | None) -> PlayedConversation:
    records = tuple(
        TurnRecord(turn=n, user=f"u{n}", actual_output="ok", actual_tool_calls=[], latency_ms=ms)
        for n, ms in enumerate(latencies, 1)
    )
    return PlayedConversation(turns=records, ended_by="script")


@pytest.mark.parametrize(
    ("check", "latencies", "status", "detail"),
    [
        (
            LatencyBelow(ms=1000),
            (200, 900, 300),
            "passed",
            "Every turn answered within the 1,000 ms allowed (the slowest took 900 ms).",
        ),
        (
            LatencyBelow(ms=1000),
            (200, 1900, 1300),
            "failed",
            "Turn 2 took 1,900 ms, over the 1,000 ms allowed each turn.",
        ),
        (
            LatencyBelow(ms=1000),
            (None, 1900, 300),
            "failed",
            "Turn 2 took 1,900 ms, over the 1,000 ms allowed each turn.",
        ),
        (
            LatencyBelow(ms=1000),
            (None, 900, 300),
            "not_graded",
            "The agent call's latency was not reported (a CI client posts latency_ms), so this "
            "check cannot be graded.",
        ),
        (
            LatencyBelow(ms=1000, total=True),
            (200, 300, 400),
            "passed",
            "The 3 turns took 900 ms in all, within the 1,000 ms allowed.",
        ),
        (
            LatencyBelow(ms=1000, total=True),
            (200, 900, 300),
            "failed",
            "The 3 turns took 1,400 ms in all, over the 1,000 ms allowed.",
        ),
        (
            LatencyBelow(ms=1000, total=True),
            (200, None, 300),
            "not_graded",
            "The agent call's latency was not reported (a CI client posts latency_ms), so this "
            "check cannot be graded.",
        ),
    ],
)
def test_latency_below_in_a_conversation(
    check: Check, latencies: tuple[int | None, ...], status: str, detail: str
) -> None:
    result = grade_conversation(conversation(None, check), played(*latencies)).check_results[0]
    assert (result.status, result.detail) == (status, detail)


def test_a_turns_latency_check_reads_that_turn() -> None:
    content = conversation(LatencyBelow(ms=500), OutputEquals(value="ok"))
    results = grade_conversation(content, played(900, 450, 900)).check_results
    assert (results[0].turn, results[0].status, results[0].detail) == (
        2,
        "passed",
        "The agent answered in 450 ms, within the 500 ms allowed.",
    )
