"""read_span: one span's attributes read in each dialect."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentlasso.traces.dialects import SpanKind, SpanReading, read_span
from agentlasso.traces.messages import Message, ToolRequest, content_text, messages_from_json
from agentlasso.traces.spans import STATUS_ERROR, Span, SpanEvent


def reading_of(attributes: dict[str, Any], **fields: Any) -> SpanReading:
    """What read_span makes of a span with these attributes."""
    return read_span(Span(trace_id="0" * 32, span_id="1" * 16, attributes=attributes, **fields))


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"gen_ai.operation.name": "chat"}, "model_call"),
        ({"gen_ai.operation.name": "text_completion"}, "model_call"),
        ({"gen_ai.operation.name": "embeddings"}, "model_call"),
        ({"gen_ai.operation.name": "execute_tool"}, "tool_call"),
        ({"gen_ai.operation.name": "invoke_agent"}, "agent"),
        ({"gen_ai.tool.name": "search"}, "tool_call"),
        ({"gen_ai.request.model": "gpt-4o"}, "model_call"),
        ({"llm.request.type": "chat"}, "model_call"),
        ({"gen_ai.prompt.0.role": "user"}, "model_call"),
        ({"traceloop.span.kind": "tool"}, "tool_call"),
        ({"traceloop.span.kind": "workflow"}, "agent"),
        ({"traceloop.span.kind": "task"}, "agent"),
        ({"openinference.span.kind": "LLM"}, "model_call"),
        ({"openinference.span.kind": "TOOL"}, "tool_call"),
        ({"openinference.span.kind": "AGENT"}, "agent"),
        ({"openinference.span.kind": "chain"}, "agent"),
        ({"openinference.span.kind": "RETRIEVER"}, "other"),
        ({"http.method": "GET"}, "other"),
        ({"gen_ai.operation.name": None, "openinference.span.kind": 3}, "other"),
    ],
)
def test_what_a_span_is(attributes: dict[str, Any], kind: SpanKind) -> None:
    assert reading_of(attributes).kind == kind


@pytest.mark.parametrize(
    ("recorded", "messages"),
    [
        # GenAI semconv parts.
        (
            [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "text", "content": "Hi"},
                        {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}},
                    ],
                }
            ],
            [
                Message(
                    role="assistant",
                    text="Hi",
                    tool_requests=(ToolRequest(name="f", arguments={"a": 1}, call_id="c1"),),
                )
            ],
        ),
        # OpenAI chat: content parts, tool_calls with JSON-text arguments, a tool message.
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url", "image_url": {}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "g", "arguments": '{"b": 2}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c2", "content": "ok"},
            ],
            [
                Message(role="user", text="a"),
                Message(
                    role="assistant",
                    tool_requests=(ToolRequest(name="g", arguments={"b": 2}, call_id="c2"),),
                ),
                Message(role="tool", text="ok", call_id="c2"),
            ],
        ),
        # Anthropic: tool_use and tool_result blocks.
        (
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "h", "input": {"c": 3}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "text", "text": "done"}],
                        }
                    ],
                },
            ],
            [
                Message(
                    role="assistant",
                    tool_requests=(ToolRequest(name="h", arguments={"c": 3}, call_id="t1"),),
                ),
                Message(role="tool", text="done", call_id="t1"),
            ],
        ),
        # Framework role names fold into the usual four.
        (
            [{"role": "human", "content": "q"}, {"role": "model", "parts": ["r"]}],
            [Message(role="user", text="q"), Message(role="assistant", text="r")],
        ),
        # Odd entries are skipped, plain text is one message.
        ([1, None, {"role": "user"}], [Message(role="user")]),
        ("just text", [Message(role="user", text="just text")]),
        ('{"role": "user", "content": "one"}', [Message(role="user", text="one")]),
    ],
)
def test_message_shapes(recorded: Any, messages: list[Message]) -> None:
    assert list(messages_from_json(recorded, "user")) == messages


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, "b"], "a\nb"),
        ({"temp_c": 18}, '{"temp_c":18}'),
        ([{"rows": 2}], '[{"rows":2}]'),
        (None, ""),
    ],
)
def test_content_text(content: Any, text: str) -> None:
    assert content_text(content) == text


def test_openinference_multi_part_content_and_legacy_function_calls() -> None:
    reading = reading_of(
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": "look",
            "llm.input_messages.0.message.contents.1.message_content.type": "image",
            "llm.input_messages.0.message.contents.2.message_content.text": "here",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.function_call_name": "old_style",
            "llm.output_messages.0.message.function_call_arguments_json": '{"x": 1}',
        }
    )

    assert reading.input_messages == (Message(role="user", text="look\nhere"),)
    assert reading.output_messages[0].tool_requests == (
        ToolRequest(name="old_style", arguments={"x": 1}),
    )


def test_openllmetry_content_parts_stored_as_json_text() -> None:
    parts = json.dumps([{"type": "text", "text": "from parts"}])
    reading = reading_of(
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": parts,
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "[1, 2]",
        }
    )

    assert [m.text for m in reading.input_messages] == ["from parts", "[1, 2]"]


def test_indexes_sort_as_numbers() -> None:
    attributes = {f"gen_ai.prompt.{i}.content": str(i) for i in (10, 2, 1)}

    assert [m.text for m in reading_of(attributes).input_messages] == ["1", "2", "10"]


@pytest.mark.parametrize(
    ("attributes", "arguments", "result"),
    [
        (
            {
                "gen_ai.tool.name": "t",
                "gen_ai.tool.call.arguments": '{"a": 1}',
                "gen_ai.tool.call.result": "sunny",
            },
            {"a": 1},
            "sunny",
        ),
        (
            {
                "gen_ai.tool.name": "t",
                "gen_ai.tool.call.arguments": {"a": 1},
                "gen_ai.tool.call.result": "42",
            },
            {"a": 1},
            "42",
        ),
        ({"gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": "{broken"}, "{broken", None),
        (
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.input": '{"args": ["Paris"], "kwargs": {}}',
            },
            "Paris",
            None,
        ),
        (
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.input": '{"args": [1, 2], "kwargs": {}}',
            },
            {"args": [1, 2], "kwargs": {}},
            None,
        ),
        (
            {"openinference.span.kind": "TOOL", "input.value": '{"q": "x"}', "output.value": "[1]"},
            {"q": "x"},
            [1],
        ),
    ],
)
def test_tool_arguments_and_results(
    attributes: dict[str, Any], arguments: Any, result: Any
) -> None:
    reading = reading_of(attributes)

    assert (reading.arguments, reading.result) == (arguments, result)


@pytest.mark.parametrize(
    ("attributes", "name", "tool_name"),
    [
        ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}, "x", "search"),
        ({"openinference.span.kind": "TOOL", "tool.name": "lookup"}, "x", "lookup"),
        ({"traceloop.span.kind": "tool", "traceloop.entity.name": "fetch"}, "fetch.tool", "fetch"),
        ({"gen_ai.operation.name": "execute_tool"}, "execute_tool get_time", "get_time"),
        ({"gen_ai.operation.name": "execute_tool"}, "", "unknown"),
    ],
)
def test_tool_names(attributes: dict[str, Any], name: str, tool_name: str) -> None:
    assert reading_of(attributes, name=name).tool_name == tool_name


@pytest.mark.parametrize(
    ("attributes", "model", "tokens"),
    [
        (
            {"gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-0806"},
            "gpt-4o-0806",
            (None, None),
        ),
        (
            {
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 5,
                "gen_ai.usage.output_tokens": 6,
            },
            "gpt-4o",
            (5, 6),
        ),
        ({"gen_ai.usage.prompt_tokens": 7.0, "gen_ai.usage.completion_tokens": "8"}, None, (7, 8)),
        (
            {
                "llm.model_name": "claude",
                "llm.token_count.prompt": 9,
                "llm.token_count.completion": True,
            },
            "claude",
            (9, None),
        ),
    ],
)
def test_model_and_tokens(
    attributes: dict[str, Any], model: str | None, tokens: tuple[int | None, int | None]
) -> None:
    reading = reading_of(attributes)

    assert (reading.model, (reading.input_tokens, reading.output_tokens)) == (model, tokens)


def test_system_instructions_come_first() -> None:
    reading = reading_of(
        {
            "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
            "gen_ai.input.messages": [
                {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
            ],
        }
    )

    assert [(m.role, m.text) for m in reading.input_messages] == [
        ("system", "Be brief."),
        ("user", "Hi"),
    ]


def test_an_exception_event_is_a_tool_error_even_without_error_status() -> None:
    boom = SpanEvent(name="exception", time_ns=1, attributes={"exception.message": "disk full"})

    reading = reading_of({"gen_ai.tool.name": "save"}, events=(boom,))

    assert (reading.failed, reading.error) == (False, "disk full")
    assert reading_of({}, status_code=STATUS_ERROR, status_message="bad").error == "bad"
