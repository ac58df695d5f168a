"""Tool calls and replies as clients post them, normalised."""

from __future__ import annotations

import msgspec
import pytest

from agentlasso.domain.grades import Observation, ToolCall, reply_text
from agentlasso.grading import normalise_tool_calls, observation_from_wire


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            [{"name": "orders.lookup", "arguments": {"id": 7}}],
            (ToolCall("orders.lookup", {"id": 7}),),
            id="name-and-object-arguments",
        ),
        pytest.param(
            [{"name": "orders.lookup", "arguments": '{"id": 7}'}],
            (ToolCall("orders.lookup", {"id": 7}),),
            id="arguments-as-json-string",
        ),
        pytest.param(
            [{"name": "orders.lookup", "arguments": "{not json"}],
            (ToolCall("orders.lookup", "{not json"),),
            id="arguments-bad-json-kept-as-sent",
        ),
        pytest.param(
            [{"name": "orders.lookup"}],
            (ToolCall("orders.lookup", None),),
            id="no-arguments",
        ),
        pytest.param(
            [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "stripe.refund", "arguments": '{"amount": 42}'},
                }
            ],
            (ToolCall("stripe.refund", {"amount": 42}),),
            id="openai-shape",
        ),
        pytest.param(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "stripe.refund",
                    "input": {"amount": 42},
                }
            ],
            (ToolCall("stripe.refund", {"amount": 42}),),
            id="anthropic-shape",
        ),
        pytest.param(
            [
                {"type": "text", "text": "Let me look that up."},
                {"type": "tool_use", "name": "orders.lookup", "input": {}},
                {"type": "thinking", "thinking": "..."},
                {"function": {"name": "stripe.refund", "arguments": "{}"}},
                {"name": "email.send", "arguments": {}},
            ],
            (
                ToolCall("orders.lookup", {}),
                ToolCall("stripe.refund", {}),
                ToolCall("email.send", {}),
            ),
            id="mixed-shapes-keep-order-and-skip-content-blocks",
        ),
        pytest.param(
            [{"name": "Orders.Lookup "}],
            (ToolCall("Orders.Lookup ", None),),
            id="name-kept-exactly",
        ),
        pytest.param([], (), id="empty-list-is-no-calls"),
        pytest.param(({"name": "a"},), (ToolCall("a", None),), id="a-tuple-is-a-list-too"),
    ],
)
def test_readable_shapes_are_normalised(raw: object, expected: tuple[ToolCall, ...]) -> None:
    calls, problems = normalise_tool_calls(raw)
    assert calls == expected
    assert problems == ()


@pytest.mark.parametrize(
    ("raw", "calls", "problems"),
    [
        pytest.param(
            [{"name": "a"}, 42, {"name": ""}, {"arguments": {}}, ["b"], None, {"function": {}}],
            (ToolCall("a", None),),
            (
                "entry 2 is a number, not an object",
                "entry 3 has no tool name",
                "entry 4 has no tool name",
                "entry 5 is a list, not an object",
                "entry 6 is null, not an object",
                "entry 7 has no tool name",
            ),
            id="malformed-entries-described-not-raised",
        ),
        pytest.param(
            [{"name": 7}, {"name": True}, 1.5, "c"],
            (),
            (
                "entry 1 has no tool name",
                "entry 2 has no tool name",
                "entry 3 is a number, not an object",
                "entry 4 is a string, not an object",
            ),
            id="names-that-are-not-strings",
        ),
        pytest.param(
            {"name": "a"}, (), ("the tool calls were an object, not a list",), id="object"
        ),
        pytest.param(
            '[{"name": "a"}]', (), ("the tool calls were a string, not a list",), id="str"
        ),
        pytest.param(b"[]", (), ("the tool calls were a bytes, not a list",), id="bytes"),
        pytest.param(3, (), ("the tool calls were a number, not a list",), id="number"),
        pytest.param(False, (), ("the tool calls were a boolean, not a list",), id="boolean"),
    ],
)
def test_malformed_tool_calls_never_raise(
    raw: object, calls: tuple[ToolCall, ...], problems: tuple[str, ...]
) -> None:
    assert normalise_tool_calls(raw) == (calls, problems)


@pytest.mark.parametrize("depth", [65, 900, 100_000])
def test_arguments_nested_too_deeply_are_kept_as_sent(depth: int) -> None:
    deep = "[" * depth + "]" * depth
    calls, _ = normalise_tool_calls([{"name": "a", "arguments": deep}])
    assert calls[0].arguments == deep


@pytest.mark.parametrize(
    ("output", "output_reported", "expected"),
    [
        pytest.param("hi", True, "hi", id="text"),
        pytest.param("", True, "", id="empty-string-is-a-reply"),
        pytest.param(None, True, None, id="null-is-not-reported"),
        pytest.param("hi", False, None, id="absent-is-not-reported"),
        pytest.param(msgspec.UNSET, True, None, id="unset-is-not-reported"),
        pytest.param({"ok": True, "n": [1, 2]}, True, '{"ok":true,"n":[1,2]}', id="object-as-json"),
        pytest.param(42, True, "42", id="number-as-json"),
    ],
)
def test_reply_reported_or_not(output: object, output_reported: bool, expected: str | None) -> None:
    observation = observation_from_wire(output, [], output_reported=output_reported)
    assert observation.actual_output == expected


@pytest.mark.parametrize(
    ("calls", "calls_reported", "expected"),
    [
        pytest.param([], True, (), id="empty-list-is-no-calls"),
        pytest.param(None, True, None, id="null-is-not-reported"),
        pytest.param([{"name": "a"}], False, None, id="absent-is-not-reported"),
        pytest.param(msgspec.UNSET, True, None, id="unset-is-not-reported"),
        pytest.param([{"name": "a"}], True, (ToolCall("a"),), id="calls"),
    ],
)
def test_tool_calls_reported_or_not(
    calls: object, calls_reported: bool, expected: tuple[ToolCall, ...] | None
) -> None:
    observation = observation_from_wire("x", calls, tool_calls_reported=calls_reported)
    assert observation.tool_calls == expected


def test_unreadable_entries_travel_with_the_observation() -> None:
    observation = observation_from_wire("x", [{"name": "a"}, 5])
    assert observation == Observation(
        actual_output="x",
        tool_calls=(ToolCall("a"),),
        unreadable_tool_calls=("entry 2 is a number, not an object",),
    )


def test_a_reply_that_is_not_json_encodable_is_graded_as_its_text() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque reply"

    assert reply_text(Opaque()) == "opaque reply"


def test_an_agent_error_travels_with_the_observation_and_fails_every_check() -> None:
    from agentlasso.domain.checks import OutputContains, ToolCalled
    from agentlasso.domain.test_cases import TestCaseContent
    from agentlasso.grading import grade_case

    observation = observation_from_wire(
        msgspec.UNSET, msgspec.UNSET, agent_error="the agent answered HTTP 503 (3 tries)"
    )
    assert observation.agent_error == "the agent answered HTTP 503 (3 tries)"
    assert observation_from_wire("x", []).agent_error is None
    content = TestCaseContent(
        input="x", checks=(ToolCalled(id="c1", tool="a"), OutputContains(id="c2", value="x"))
    )
    result = grade_case(content, observation)
    assert [c.detail for c in result.check_results] == [
        "The agent answered HTTP 503 (3 tries)."
    ] * 2
