"""Properties of summarise over arbitrary spans: it never raises, calls come in start order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlasso.traces.spans import Span, SpanEvent
from agentlasso.traces.summary import summarise

# Keys every dialect reads, and the indexed shapes, so arbitrary values reach every reader.
KNOWN_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.prompt_tokens",
    "gen_ai.prompt",
    "gen_ai.completion",
    "error.type",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.prompt.1.tool_call_id",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "gen_ai.completion.0.tool_calls.0.id",
    "llm.request.type",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "openinference.span.kind",
    "input.value",
    "input.mime_type",
    "output.value",
    "output.mime_type",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.input_messages.0.message.contents.0.message_content.text",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id",
    "tool.name",
    "llm.model_name",
    "llm.token_count.prompt",
    "llm.token_count.completion",
]
KNOWN_VALUES = [
    "chat",
    "execute_tool",
    "invoke_agent",
    "tool",
    "workflow",
    "LLM",
    "TOOL",
    "AGENT",
    "application/json",
    "user",
    "assistant",
    "tool_call",
    "tool_call_response",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(KNOWN_VALUES),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "parts",
                    "content",
                    "type",
                    "id",
                    "name",
                    "arguments",
                    "response",
                    "tool_calls",
                    "function",
                    "message",
                    "text",
                ]
            )
            | st.text(max_size=5),
            inner,
            max_size=4,
        )
    ),
    max_leaves=6,
)


def as_json_text(value: Any) -> str:
    """The value's JSON text, as instrumentations record structures."""
    return json.dumps(value, allow_nan=True)


attribute_values = json_values | json_values.map(as_json_text)
random_attributes = st.dictionaries(
    st.sampled_from(KNOWN_KEYS) | st.text(max_size=20), attribute_values, max_size=4
)
# Well-formed GenAI messages with tool calls and responses, so pairing and ordering get exercised.
call_ids = st.sampled_from(["c1", "c2", None])
tool_names = st.sampled_from(["lookup", "refund"])
parts = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["text", "tool_call", "tool_call_response"]),
        "id": call_ids,
        "name": tool_names,
        "arguments": json_values,
        "response": json_values,
        "content": st.text(max_size=5),
    }
)
messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "tool"]),
            "parts": st.lists(parts, max_size=3),
        }
    ),
    max_size=3,
)
conversation_attributes = st.fixed_dictionaries(
    {},
    optional={
        "gen_ai.input.messages": messages.map(as_json_text),
        "gen_ai.output.messages": messages,
        "gen_ai.tool.call.id": call_ids,
        "gen_ai.tool.name": tool_names,
    },
)
kinds = st.sampled_from(
    [
        {},
        {"gen_ai.operation.name": "chat"},
        {"gen_ai.operation.name": "execute_tool"},
        {"gen_ai.operation.name": "invoke_agent"},
        {"openinference.span.kind": "LLM"},
        {"openinference.span.kind": "TOOL"},
        {"traceloop.span.kind": "tool"},
    ]
)
attributes = st.builds(
    lambda noise, conversation, kind: {**noise, **conversation, **kind},
    random_attributes,
    conversation_attributes,
    kinds,
)
events = st.builds(
    SpanEvent,
    name=st.sampled_from(
        [
            "exception",
            "gen_ai.user.message",
            "gen_ai.choice",
            "gen_ai.tool.message",
            "gen_ai.content.prompt",
            "other",
        ]
    ),
    time_ns=st.integers(min_value=0, max_value=10**19),
    attributes=st.dictionaries(
        st.sampled_from(
            ["content", "message", "tool_calls", "id", "exception.message", "gen_ai.prompt", "body"]
        ),
        attribute_values,
        max_size=3,
    ),
)
span_ids = st.sampled_from(["s1", "s2", "s3", "s4", "s5"])
spans = st.builds(
    Span,
    trace_id=st.just("0" * 32),
    span_id=span_ids,
    parent_span_id=st.none() | span_ids | st.just("missing"),
    name=st.text(max_size=10),
    start_ns=st.integers(min_value=-5, max_value=10**19),
    end_ns=st.integers(min_value=-5, max_value=10**19),
    status_code=st.integers(min_value=0, max_value=3),
    status_message=st.text(max_size=5),
    attributes=attributes,
    events=st.lists(events, max_size=2).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(spans, max_size=5))
def test_summarise_never_raises_and_orders_tool_calls_by_start(trace: list[Span]) -> None:
    summary = summarise(trace)

    starts = [call.started_ns for call in summary.tool_calls]
    assert starts == sorted(starts)
    assert summary.span_count == len({span.span_id for span in trace})
    assert summary.duration_ms >= 0
    assert summary.output is None or isinstance(summary.output, str)
