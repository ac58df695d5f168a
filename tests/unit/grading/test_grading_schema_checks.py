"""output_matches_schema and tool_args_valid (contract section 17): the reply's shape, and each
call's arguments against the input schema its tool declares; the first failing path named."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.domain.checks import Check, OutputMatchesSchema, ToolArgsValid
from agentlasso.domain.declared_tools import declared_tools
from agentlasso.domain.grades import CheckResult, DeclaredTools
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case, observation_from_wire, schema_checks
from agentlasso.grading.written_checks import declared_tool_problems, written_check_problems

ORDER = {
    "type": "object",
    "required": ["order_id", "items"],
    "properties": {
        "order_id": {"type": "string", "pattern": "^A[0-9]+$"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"price": {"type": "number", "minimum": 0}}},
        },
    },
}


def grade_one(
    check: Check, reply: str = "", calls: Any = (), tools: DeclaredTools | None = None
) -> CheckResult:
    observation = observation_from_wire(reply, list(calls))
    content = TestCaseContent(input="q", checks=(check,))
    return grade_case(content, observation, declared_tools=tools).check_results[0]


@pytest.mark.parametrize(
    ("reply", "status", "detail"),
    [
        ('{"order_id": "A1", "items": [{"price": 3}]}', "passed", "The reply matches the schema."),
        (' \n{"order_id": "A1", "items": []}\n', "passed", "The reply matches the schema."),
        (
            '{"order_id": "A1", "items": [{"price": 1}, {"price": 2}, {"price": -3}]}',
            "failed",
            "The reply does not match the schema: $.items[2].price: -3 is less than the minimum 0.",
        ),
        (
            '{"order_id": "B7", "items": []}',
            "failed",
            'The reply does not match the schema: $.order_id: "B7" does not match the pattern '
            '"^A[0-9]+$".',
        ),
        (
            '{"items": []}',
            "failed",
            'The reply does not match the schema: $: the required property "order_id" is missing.',
        ),
        (
            "Your order A1 is on its way.",
            "failed",
            "The reply is not valid JSON: Expecting value at line 1 column 1.",
        ),
        (
            '{"order_id": ',
            "failed",
            "The reply is not valid JSON: Expecting value at line 1 column 13.",
        ),
        (
            '"\\ud800"',
            "failed",
            'The reply does not match the schema: $: "?" is not of type object.',
        ),
    ],
)
def test_output_matches_schema(reply: str, status: str, detail: str) -> None:
    result = grade_one(OutputMatchesSchema(schema=ORDER), reply)
    assert (result.status, result.detail) == (status, detail)


def test_a_stored_schema_that_cannot_be_used_is_not_graded_rather_than_passed() -> None:
    result = grade_one(OutputMatchesSchema(schema={"type": 12}), "{}")
    assert result.status == "not_graded"
    assert result.detail.startswith("The schema cannot be used: at /type: ")


def test_a_hostile_pattern_runs_in_linear_time() -> None:
    schema = {"type": "string", "pattern": "^(a+)+$"}
    result = grade_one(OutputMatchesSchema(schema=schema), '"' + "a" * 50_000 + '!"')
    assert result.status == "failed"


TOOLS = declared_tools(
    [
        {
            "name": "stripe.refund",
            "input_schema": {
                "type": "object",
                "required": ["amount"],
                "properties": {"amount": {"type": "number", "minimum": 0}},
                "additionalProperties": False,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "orders.lookup",
                "parameters": {
                    "type": "object",
                    "required": ["order_id"],
                    "properties": {"order_id": {"type": "string"}},
                },
            },
        },
        {"name": "broken", "input_schema": {"type": "nonsense"}},
    ]
)


def calls(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments} for name, arguments in pairs]


@pytest.mark.parametrize(
    ("check", "made", "status", "detail"),
    [
        (
            ToolArgsValid(),
            calls(("orders.lookup", {"order_id": "A1"}), ("stripe.refund", '{"amount": 4}')),
            "passed",
            "All 2 tool calls had valid arguments.",
        ),
        (
            ToolArgsValid(),
            calls(("orders.lookup", {"order_id": "A1"})),
            "passed",
            "The tool call had valid arguments.",
        ),
        (
            ToolArgsValid(),
            [],
            "passed",
            "The agent made no tool calls, so none had invalid arguments.",
        ),
        (
            ToolArgsValid(tool="stripe.refund"),
            calls(("orders.lookup", {})),
            "passed",
            "The agent made no calls of stripe.refund, so none had invalid arguments.",
        ),
        (
            ToolArgsValid(),
            calls(("stripe.refund", {"amount": -3})),
            "failed",
            "stripe.refund was called with arguments that are not valid: $.amount: -3 is less than "
            "the minimum 0.",
        ),
        (
            ToolArgsValid(),
            calls(
                ("orders.lookup", {"order_id": "A1"}), ("stripe.refund", {"amount": 1, "memo": "x"})
            ),
            "failed",
            'stripe.refund was called with arguments that are not valid: $: the property "memo" is '
            "not allowed.",
        ),
        (
            ToolArgsValid(tool="orders.lookup"),
            [{"name": "orders.lookup"}],
            "failed",
            "orders.lookup was called with arguments that are not valid: $: the required property "
            '"order_id" is missing.',
        ),
        (
            ToolArgsValid(),
            calls(("stripe.refund", "not json")),
            "failed",
            'stripe.refund was called with arguments that are not valid: $: "not json" is not of '
            "type object.",
        ),
        (
            ToolArgsValid(),
            calls(("email.send", {})),
            "failed",
            "email.send was called, but the agent declares no such tool.",
        ),
        (
            ToolArgsValid(tool="email.send"),
            calls(("email.send", {})),
            "not_graded",
            "The agent declares no tool named email.send.",
        ),
        (
            ToolArgsValid(),
            calls(("broken", {})),
            "not_graded",
            "The input_schema broken declares cannot be used: at /type: ",
        ),
        (
            ToolArgsValid(),
            [*calls(("orders.lookup", {"order_id": "A1"})), 5],
            "failed",
            "Cannot confirm every call had valid arguments. Could not read every reported tool "
            "call: entry 2 is a number, not an object.",
        ),
    ],
)
def test_tool_args_valid(check: Check, made: Any, status: str, detail: str) -> None:
    result = grade_one(check, calls=made, tools=TOOLS)
    assert result.status == status
    if detail.endswith(": "):  # the rest is the validator's own words about a bad schema
        assert result.detail.startswith(detail), result.detail
    else:
        assert result.detail == detail


def test_tool_args_valid_is_not_graded_when_the_agent_declares_no_tools() -> None:
    result = grade_one(ToolArgsValid(), calls=calls(("a", {})), tools=None)
    assert result.status == "not_graded"
    assert "declares no tools" in result.detail


@pytest.mark.parametrize(
    ("tools", "names"),
    [
        (None, None),
        ([], None),
        ([{"name": "a"}, "x", {"name": "", "input_schema": {}}, {"function": {"name": 3}}], None),
        (
            [
                {"name": "a", "input_schema": {"type": "object"}},
                {"name": "a", "input_schema": True},
            ],
            {"a": {"type": "object"}},
        ),
        ([{"name": "b", "parameters": {}}], {"b": {}}),
    ],
)
def test_declared_tools_read_the_shapes_agents_write(tools: Any, names: Any) -> None:
    assert declared_tools(tools) == names


@pytest.mark.parametrize(
    ("written", "problems"),
    [
        (OutputMatchesSchema(schema=ORDER), []),
        (
            OutputMatchesSchema(schema={"properties": {"price": {"minimum": "x"}}}),
            [
                (
                    "/schema/properties/price/minimum",
                    'The schema cannot be used at /properties/price/minimum: "x" is not of type '
                    "number.",
                )
            ],
        ),
        (
            OutputMatchesSchema(schema={"$ref": "https://example.com/s.json"}),
            [
                (
                    "/schema/$ref",
                    "The schema cannot be used at /$ref: the reference "
                    '"https://example.com/s.json" is outside the schema; only references '
                    "within it are allowed.",
                )
            ],
        ),
        (ToolArgsValid(), []),
    ],
)
def test_schemas_that_cannot_be_used_are_refused_at_write_time(
    written: Check, problems: list[tuple[str, str]]
) -> None:
    assert written_check_problems(written) == problems


def test_schemas_over_64_kib_are_refused_at_write_time() -> None:
    huge = {"description": "x" * 70_000}
    ((pointer, detail),) = written_check_problems(OutputMatchesSchema(schema=huge))
    assert pointer == "/schema"
    assert "65,536" in detail


def test_each_runs_tools_are_compiled_once_and_the_memory_of_them_stays_bounded() -> None:
    schema = {"type": "object", "required": ["n"]}
    runs = [declared_tools([{"name": "t", "input_schema": dict(schema)}]) for _ in range(40)]
    for tools in runs * 2:
        result = grade_one(ToolArgsValid(), calls=calls(("t", {})), tools=tools)
        assert result.detail.endswith('the required property "n" is missing.')
    assert len(schema_checks._RUN_TOOLS) <= schema_checks._RUNS_HELD


# A pattern linear in time whose constant is its whole program: over a long enough value its
# search could stall grading as an unbounded regular expression would (section 4's rule).
COSTLY = "(a|b)*a(a|b){400}c"


def test_a_schemas_patterns_too_costly_for_a_long_reply_are_not_run() -> None:
    schema = {"type": "object", "properties": {"note": {"type": "string", "pattern": COSTLY}}}
    long = '{"note": "' + "ab" * 500_000 + '"}'
    result = grade_one(OutputMatchesSchema(schema=schema), long)
    assert result.status == "not_graded"
    assert result.detail.startswith("Not run: the schema's patterns (")
    assert "over this reply (1,000,012 bytes)" in result.detail
    short = grade_one(OutputMatchesSchema(schema=schema), '{"note": "abc"}')
    assert short.status == "failed" and "does not match the pattern" in short.detail


def test_a_tools_patterns_too_costly_for_long_arguments_leave_the_check_not_graded() -> None:
    tools = declared_tools(
        [{"name": "note", "input_schema": {"properties": {"text": {"pattern": COSTLY}}}}]
    )
    made = calls(("note", {"text": "ab" * 500_000}))
    result = grade_one(ToolArgsValid(), calls=made, tools=tools)
    assert result.status == "not_graded"
    assert result.detail.startswith("note: Not run: the schema's patterns (")
    short = grade_one(ToolArgsValid(), calls=calls(("note", {"text": "ac"})), tools=tools)
    assert short.status == "failed" and "does not match the pattern" in short.detail


def test_a_declared_tool_schema_that_cannot_be_compiled_is_named_where_it_is() -> None:
    tools: list[Any] = [
        {"name": "ok", "input_schema": {"type": "object"}},
        {"name": "bad", "input_schema": {"type": "objekt"}},
        {"type": "function", "function": {"name": "f", "parameters": {"minimum": "x"}}},
        {"name": "whole", "parameters": 3},
        {"name": "undeclared"},
        "not a tool",
    ]
    problems = declared_tool_problems(tools)
    assert [pointer for pointer, _ in problems] == [
        "/1/input_schema/type",
        "/2/function/parameters/minimum",
        "/3/parameters",
    ]
    assert problems[2][1] == (
        "The input schema of whole cannot be used: a schema is a JSON object or a boolean, not 3."
    )
    assert problems[0][1].startswith("The input schema of bad cannot be used at /type: ")
    assert declared_tool_problems(None) == []
