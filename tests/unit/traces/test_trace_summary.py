"""summarise: what the trace page shows for a conversation, in each dialect, however it arrives."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from agentlasso.traces.spans import STATUS_ERROR, Span, SpanEvent
from agentlasso.traces.summary import TraceMessage, TraceSummary, TraceUsage, summarise

from .conversations import (
    AGENT,
    BERLIN_ARGS,
    BERLIN_TOOL,
    DIALECTS,
    FIRST_MODEL_CALL,
    MODEL,
    PARIS_ARGS,
    PARIS_RESULT,
    PARIS_TOOL,
    QUESTION,
    REPLY,
    SECOND_MODEL_CALL,
    SYSTEM,
    T0_NS,
    TIMEOUT,
    TRACE_ID,
)

Conversation = Callable[[], list[Span]]
dialects = pytest.mark.parametrize("conversation", DIALECTS.values(), ids=DIALECTS.keys())


def tools(summary: TraceSummary) -> list[tuple[str, Any, Any, str | None]]:
    """The tool calls as a user reads them: name, arguments, result, error."""
    return [(call.name, call.arguments, call.result, call.error) for call in summary.tool_calls]


def only(spans: list[Span], *span_ids: str) -> list[Span]:
    """The spans with these ids: the part of a trace that has arrived so far."""
    return [span for span in spans if span.span_id in span_ids]


def bare(span_id: str, **fields: Any) -> Span:
    """A span of a made-up trace."""
    return Span(trace_id=TRACE_ID, span_id=span_id, **fields)


@dialects
def test_a_whole_conversation_reads_the_same_in_every_dialect(conversation: Conversation) -> None:
    summary = summarise(conversation())

    assert summary.input == QUESTION
    assert summary.output == REPLY
    assert tools(summary) == [
        ("get_weather", PARIS_ARGS, PARIS_RESULT, None),
        ("get_forecast", BERLIN_ARGS, None, TIMEOUT),
    ]
    assert summary.model == MODEL
    assert summary.usage == TraceUsage(input_tokens=320, output_tokens=55)
    assert summary.error == TIMEOUT
    assert (summary.started_ns, summary.duration_ms, summary.span_count) == (T0_NS, 5000, 5)
    assert [call.duration_ms for call in summary.tool_calls] == [100, 150]
    assert [call.span_id for call in summary.tool_calls] == [PARIS_TOOL, BERLIN_TOOL]


@dialects
def test_the_conversation_is_the_last_model_calls_history_and_reply(
    conversation: Conversation,
) -> None:
    messages = summarise(conversation()).messages

    assert [(m.role, m.tool_names) for m in messages] == [
        ("system", ()),
        ("user", ()),
        ("assistant", ("get_weather", "get_forecast")),
        ("tool", ()),
        ("tool", ()),
        ("assistant", ()),
    ]
    assert messages[0].content == SYSTEM
    assert messages[1].content == QUESTION
    assert json.loads(messages[3].content) == PARIS_RESULT
    assert messages[4].content == f"error: {TIMEOUT}"
    assert messages[-1].content == REPLY


@dialects
@pytest.mark.parametrize("seed", range(5))
def test_span_order_does_not_matter(conversation: Conversation, seed: int) -> None:
    spans = conversation()
    shuffled = random.Random(seed).sample(spans, len(spans))

    assert summarise(shuffled) == summarise(spans)


@dialects
def test_a_span_sent_twice_counts_once(conversation: Conversation) -> None:
    spans = conversation()

    assert summarise(spans + spans[2:4]) == summarise(spans)


@dialects
def test_before_the_root_arrives_the_earliest_span_names_the_trace(
    conversation: Conversation,
) -> None:
    spans = conversation()
    summary = summarise(only(spans, PARIS_TOOL, FIRST_MODEL_CALL))

    assert summary.name == spans[1].name
    assert summary.input == QUESTION
    # The first model call only asked for tools: there is no reply yet.
    assert summary.output is None
    # The forecast has no span yet: the model's request stands for it.
    assert tools(summary) == [
        ("get_weather", PARIS_ARGS, PARIS_RESULT, None),
        ("get_forecast", BERLIN_ARGS, None, None),
    ]
    assert summary.error is None
    assert summary.usage == TraceUsage(input_tokens=120, output_tokens=30)


@dialects
def test_without_tool_spans_the_calls_come_from_the_model_requests(
    conversation: Conversation,
) -> None:
    summary = summarise(only(conversation(), FIRST_MODEL_CALL, SECOND_MODEL_CALL))

    assert tools(summary) == [
        ("get_weather", PARIS_ARGS, PARIS_RESULT, None),
        ("get_forecast", BERLIN_ARGS, f"error: {TIMEOUT}", None),
    ]
    assert [call.span_id for call in summary.tool_calls] == [None, None]
    assert summary.output == REPLY


@dialects
def test_tool_spans_alone_still_list_the_calls(conversation: Conversation) -> None:
    summary = summarise(only(conversation(), BERLIN_TOOL, PARIS_TOOL))

    assert [call.name for call in summary.tool_calls] == ["get_weather", "get_forecast"]
    assert summary.usage is None
    assert summary.model is None
    assert summary.error == TIMEOUT
    assert summary.duration_ms == 300


@dialects
def test_the_root_agent_alone_gives_input_and_output(conversation: Conversation) -> None:
    summary = summarise(only(conversation(), AGENT))

    assert (summary.input, summary.output) == (QUESTION, REPLY)
    assert summary.messages == (
        TraceMessage(role="user", content=QUESTION),
        TraceMessage(role="assistant", content=REPLY),
    )


def test_a_failed_root_is_the_traces_error() -> None:
    spans = [
        bare("b1", name="tool", start_ns=2, end_ns=3, parent_span_id="b0", status_code=2),
        bare("b0", name="agent run", start_ns=1, end_ns=9, status_code=STATUS_ERROR),
    ]

    assert summarise(spans).error == "agent run failed"


@pytest.mark.parametrize(
    ("attributes", "events", "error"),
    [
        ({}, (), "step failed"),
        ({"error.type": "RateLimitError"}, (), "RateLimitError"),
        (
            {},
            (SpanEvent(name="exception", time_ns=1, attributes={"exception.message": "boom"}),),
            "boom",
        ),
    ],
)
def test_a_failed_span_without_a_status_message(
    attributes: dict[str, Any], events: tuple[SpanEvent, ...], error: str
) -> None:
    span = bare("c1", name="step", status_code=STATUS_ERROR, attributes=attributes, events=events)

    assert summarise([span]).error == error


def test_the_older_event_based_genai_form() -> None:
    events: list[tuple[str, dict[str, Any]]] = [
        ("gen_ai.system.message", {"content": SYSTEM}),
        ("gen_ai.user.message", {"content": QUESTION}),
        (
            "gen_ai.assistant.message",
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(PARIS_ARGS)},
                    }
                ]
            },
        ),
        ("gen_ai.tool.message", {"id": "c1", "content": json.dumps(PARIS_RESULT)}),
        (
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": json.dumps({"content": REPLY})},
        ),
    ]
    span = bare(
        "d1",
        name="chat gpt-4o",
        start_ns=1,
        end_ns=2,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
        events=tuple(SpanEvent(name=name, time_ns=1, attributes=body) for name, body in events),
    )

    summary = summarise([span])

    assert (summary.input, summary.output, summary.model) == (QUESTION, REPLY, "gpt-4o")
    assert [m.role for m in summary.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert summary.messages[2].tool_names == ("get_weather",)


def test_the_event_choice_asking_for_a_tool() -> None:
    choice = {
        "message": {
            "tool_calls": [
                {"id": "c9", "function": {"name": "search", "arguments": '{"q": "otel"}'}}
            ]
        }
    }
    span = bare(
        "d2",
        start_ns=5,
        end_ns=7,
        attributes={"gen_ai.operation.name": "chat"},
        events=(SpanEvent(name="gen_ai.choice", time_ns=6, attributes=choice),),
    )

    assert tools(summarise([span])) == [("search", {"q": "otel"}, None, None)]
    assert summarise([span]).tool_calls[0].started_ns == 7


def test_text_parts_are_joined_with_a_newline() -> None:
    parts = [{"type": "text", "content": "Hello"}, {"type": "text", "content": "world"}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": parts}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }

    summary = summarise([bare("e1", attributes=attributes)])

    assert (summary.input, summary.output) == ("Hello\nworld", "Hello\nworld")


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ('{"question": "hi", "user": 7}', {"question": "hi", "user": 7}),
        ('"plain"', "plain"),
        ("{not json", "{not json"),
    ],
)
def test_an_agents_json_input_is_kept_as_json(recorded: str, expected: Any) -> None:
    attributes = {
        "openinference.span.kind": "CHAIN",
        "input.value": recorded,
        "input.mime_type": "application/json",
    }

    assert summarise([bare("f1", attributes=attributes)]).input == expected


def test_the_root_most_agent_gives_the_input() -> None:
    outer = bare(
        "g1", start_ns=1, attributes={"openinference.span.kind": "AGENT", "input.value": "outer"}
    )
    inner = bare(
        "g2",
        start_ns=0,
        parent_span_id="g1",
        attributes={"openinference.span.kind": "AGENT", "input.value": "inner"},
    )

    assert summarise([inner, outer]).input == "outer"


def test_an_agents_structured_output_gives_way_to_the_models_reply() -> None:
    agent = bare(
        "h1",
        start_ns=1,
        end_ns=10,
        attributes={
            "traceloop.span.kind": "workflow",
            "traceloop.entity.output": json.dumps({"messages": [1, 2]}),
        },
    )
    model_call = bare(
        "h2",
        parent_span_id="h1",
        start_ns=2,
        end_ns=3,
        attributes={
            "llm.request.type": "chat",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Done.",
        },
    )

    assert summarise([agent, model_call]).output == "Done."
    assert summarise([agent]).output == '{"messages":[1,2]}'


def test_a_tool_span_and_its_request_without_call_ids_count_once() -> None:
    model_call = bare(
        "i1",
        start_ns=1,
        end_ns=2,
        attributes={
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"id": 1}',
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "lookup",
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"id": 2}',
        },
    )
    first = bare(
        "i2",
        start_ns=3,
        end_ns=4,
        attributes={"openinference.span.kind": "TOOL", "tool.name": "lookup"},
    )

    summary = summarise([model_call, first])

    # The span stands for the first request (with its arguments); the second has no span yet.
    assert tools(summary) == [("lookup", {"id": 1}, None, None), ("lookup", {"id": 2}, None, None)]
    assert [call.span_id for call in summary.tool_calls] == ["i2", None]


def test_usage_is_none_when_no_span_counted_tokens() -> None:
    span = bare("j1", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})

    assert summarise([span]).usage is None


def test_an_agents_totals_count_when_no_model_call_recorded_tokens() -> None:
    agent = bare(
        "k1", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 9}
    )

    # Said to be an agent's totals, so a model call's tokens arriving later replace them.
    assert summarise([agent]).usage == TraceUsage(
        input_tokens=9, output_tokens=0, from_model_calls=False
    )


def test_no_spans() -> None:
    assert summarise([]) == TraceSummary(name="")


@pytest.mark.parametrize(
    ("attributes", "seen"),
    [
        # Not JSON: kept as the text the instrumentation sent.
        (
            {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "hello {"},
            {"input": "hello {"},
        ),
        (
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[1, null, {}]"},
            {"output": None},
        ),
        ({"gen_ai.operation.name": "chat", "gen_ai.input.messages": 12}, {"input": "12"}),
        (
            {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "12"},
            {"usage": TraceUsage(input_tokens=12)},
        ),
        ({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "many"}, {"usage": None}),
        ({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": -3}, {"usage": None}),
        ({"gen_ai.operation.name": "chat", "gen_ai.response.model": 4}, {"model": "4"}),
        ({"gen_ai.operation.name": "chat", "gen_ai.response.model": ["x"]}, {"model": None}),
        ({"gen_ai.operation.name": 7, "gen_ai.tool.name": 42}, {"tool_names": ["42"]}),
        ({"gen_ai.operation.name": "execute_tool"}, {"tool_names": ["weird"]}),
        (
            {"gen_ai.prompt.x.role": "user", "gen_ai.prompt.0": "hi", "llm.request.type": "chat"},
            {"input": None},
        ),
    ],
)
def test_malformed_values_are_read_as_far_as_they_go(
    attributes: dict[str, Any], seen: dict[str, Any]
) -> None:
    summary = summarise([bare("m1", name="execute_tool weird", attributes=attributes)])

    shown = {
        "input": summary.input,
        "output": summary.output,
        "usage": summary.usage,
        "model": summary.model,
        "tool_names": [call.name for call in summary.tool_calls],
    }
    assert {key: shown[key] for key in seen} == seen


def test_a_parent_cycle_is_read_without_a_root() -> None:
    spans = [
        bare("n1", name="first", parent_span_id="n2", start_ns=10, end_ns=20),
        bare(
            "n2",
            name="second",
            parent_span_id="n1",
            start_ns=15,
            end_ns=40,
            status_code=STATUS_ERROR,
        ),
        bare("n3", name="self", parent_span_id="n3", start_ns=12, end_ns=13),
    ]

    summary = summarise(spans)

    assert (summary.name, summary.span_count, summary.duration_ms) == ("first", 3, 0)
    assert summary.error == "second failed"
