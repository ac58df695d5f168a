"""One agent conversation recorded in each of the three dialects, as an exporter would send it.

The agent answers a weather question: a model call asks for two tools, `get_weather` answers,
`get_forecast` times out, a second model call writes the reply.
"""

from __future__ import annotations

import json
from typing import Any

from agentlasso.traces.spans import STATUS_ERROR, Span, SpanEvent

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
T0_NS = 1_700_000_000_000_000_000
MS = 1_000_000

SYSTEM = "You are a weather assistant."
QUESTION = "What's the weather in Paris, and the forecast for Berlin?"
REPLY = "Paris is 18°C and sunny. I could not get Berlin's forecast."
PARIS_ARGS = {"city": "Paris"}
BERLIN_ARGS = {"city": "Berlin", "days": 2}
PARIS_RESULT = {"temp_c": 18, "sky": "sunny"}
TIMEOUT = "upstream timeout"
MODEL = "gpt-4o-2024-08-06"

# span id: (parent, start ms, end ms)
TIMELINE = {
    "a000000000000001": (None, 0, 5000),
    "a000000000000002": ("a000000000000001", 100, 1100),
    "a000000000000003": ("a000000000000001", 1200, 1300),
    "a000000000000004": ("a000000000000001", 1350, 1500),
    "a000000000000005": ("a000000000000001", 1600, 4900),
}
AGENT, FIRST_MODEL_CALL, PARIS_TOOL, BERLIN_TOOL, SECOND_MODEL_CALL = TIMELINE


def span(span_id: str, name: str, attributes: dict[str, Any], **fields: Any) -> Span:
    """A span of the conversation's trace, placed on its timeline."""
    parent, start_ms, end_ms = TIMELINE[span_id]
    return Span(
        trace_id=TRACE_ID,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=T0_NS + start_ms * MS,
        end_ns=T0_NS + end_ms * MS,
        attributes=attributes,
        **fields,
    )


def exception(message: str) -> SpanEvent:
    """An `exception` span event."""
    attributes = {"exception.type": "TimeoutError", "exception.message": message}
    return SpanEvent(name="exception", time_ns=T0_NS, attributes=attributes)


def genai() -> list[Span]:
    """The current OpenTelemetry GenAI semantic conventions."""
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    requests = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": PARIS_ARGS},
            {"type": "tool_call", "id": "call_2", "name": "get_forecast", "arguments": BERLIN_ARGS},
        ],
        "finish_reason": "tool_call",
    }
    responses = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "call_1", "response": PARIS_RESULT},
            {"type": "tool_call_response", "id": "call_2", "response": f"error: {TIMEOUT}"},
        ],
    }
    reply = {"role": "assistant", "parts": [{"type": "text", "content": REPLY}]}
    model = {"gen_ai.request.model": "gpt-4o", "gen_ai.response.model": MODEL}
    system = json.dumps([{"type": "text", "content": SYSTEM}])
    return [
        span(
            AGENT,
            "invoke_agent weather_bot",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather_bot",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps([reply]),
                # Totals of its model calls, which must not be counted twice.
                "gen_ai.usage.input_tokens": 320,
                "gen_ai.usage.output_tokens": 55,
            },
        ),
        span(
            FIRST_MODEL_CALL,
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                **model,
                "gen_ai.system_instructions": system,
                # Already structured, as some SDKs record it.
                "gen_ai.input.messages": [user],
                "gen_ai.output.messages": json.dumps([requests]),
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 30,
            },
        ),
        span(
            PARIS_TOOL,
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps(PARIS_ARGS),
                "gen_ai.tool.call.result": json.dumps(PARIS_RESULT),
            },
        ),
        span(
            BERLIN_TOOL,
            "execute_tool get_forecast",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_forecast",
                "gen_ai.tool.call.id": "call_2",
                "gen_ai.tool.call.arguments": json.dumps(BERLIN_ARGS),
                "error.type": "TimeoutError",
            },
            status_code=STATUS_ERROR,
            status_message=TIMEOUT,
        ),
        span(
            SECOND_MODEL_CALL,
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                **model,
                "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps([user, requests, responses]),
                "gen_ai.output.messages": json.dumps([{**reply, "finish_reason": "stop"}]),
                "gen_ai.usage.input_tokens": 200,
                "gen_ai.usage.output_tokens": 25,
            },
        ),
    ]


def openllmetry() -> list[Span]:
    """OpenLLMetry (Traceloop): indexed `gen_ai.prompt.N.*` attributes, entity spans."""
    model = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": MODEL,
    }
    history = {
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": QUESTION,
    }
    return [
        span(
            AGENT,
            "weather_bot.workflow",
            {
                "traceloop.span.kind": "workflow",
                "traceloop.entity.name": "weather_bot",
                "traceloop.entity.input": json.dumps({"args": [QUESTION], "kwargs": {}}),
                "traceloop.entity.output": json.dumps(REPLY),
            },
        ),
        span(
            FIRST_MODEL_CALL,
            "openai.chat",
            {
                **model,
                **history,
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.finish_reason": "tool_calls",
                "gen_ai.completion.0.tool_calls.0.id": "call_1",
                "gen_ai.completion.0.tool_calls.0.name": "get_weather",
                "gen_ai.completion.0.tool_calls.0.arguments": json.dumps(PARIS_ARGS),
                "gen_ai.completion.0.tool_calls.1.id": "call_2",
                "gen_ai.completion.0.tool_calls.1.name": "get_forecast",
                "gen_ai.completion.0.tool_calls.1.arguments": json.dumps(BERLIN_ARGS),
                "gen_ai.usage.prompt_tokens": 120,
                "gen_ai.usage.completion_tokens": 30,
            },
        ),
        span(
            PARIS_TOOL,
            "get_weather.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_weather",
                "traceloop.entity.input": json.dumps({"args": [], "kwargs": PARIS_ARGS}),
                "traceloop.entity.output": json.dumps(PARIS_RESULT),
            },
        ),
        span(
            BERLIN_TOOL,
            "get_forecast.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_forecast",
                "traceloop.entity.input": json.dumps({"args": [], "kwargs": BERLIN_ARGS}),
            },
            status_code=STATUS_ERROR,
            events=(exception(TIMEOUT),),
        ),
        span(
            SECOND_MODEL_CALL,
            "openai.chat",
            {
                **model,
                **history,
                "gen_ai.prompt.2.role": "assistant",
                "gen_ai.prompt.2.tool_calls.0.id": "call_1",
                "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
                "gen_ai.prompt.2.tool_calls.0.arguments": json.dumps(PARIS_ARGS),
                "gen_ai.prompt.2.tool_calls.1.id": "call_2",
                "gen_ai.prompt.2.tool_calls.1.name": "get_forecast",
                "gen_ai.prompt.2.tool_calls.1.arguments": json.dumps(BERLIN_ARGS),
                "gen_ai.prompt.3.role": "tool",
                "gen_ai.prompt.3.tool_call_id": "call_1",
                "gen_ai.prompt.3.content": json.dumps(PARIS_RESULT),
                "gen_ai.prompt.4.role": "tool",
                "gen_ai.prompt.4.tool_call_id": "call_2",
                "gen_ai.prompt.4.content": f"error: {TIMEOUT}",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": REPLY,
                "gen_ai.completion.0.finish_reason": "stop",
                "gen_ai.usage.prompt_tokens": 200,
                "gen_ai.usage.completion_tokens": 25,
            },
        ),
    ]


def openinference() -> list[Span]:
    """OpenInference (Arize Phoenix): span kinds, `input.value`, flattened LLM messages."""
    history = {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUESTION,
    }
    requested = "llm.output_messages.0.message.tool_calls"
    asked = "llm.input_messages.2.message.tool_calls"
    return [
        span(
            AGENT,
            "WeatherAgent",
            {
                "openinference.span.kind": "AGENT",
                "input.value": QUESTION,
                "input.mime_type": "text/plain",
                "output.value": REPLY,
                "output.mime_type": "text/plain",
                "llm.token_count.prompt": 320,
                "llm.token_count.completion": 55,
            },
        ),
        span(
            FIRST_MODEL_CALL,
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": MODEL,
                "input.value": json.dumps({"messages": [{"role": "user", "content": QUESTION}]}),
                "input.mime_type": "application/json",
                **history,
                "llm.output_messages.0.message.role": "assistant",
                f"{requested}.0.tool_call.id": "call_1",
                f"{requested}.0.tool_call.function.name": "get_weather",
                f"{requested}.0.tool_call.function.arguments": json.dumps(PARIS_ARGS),
                f"{requested}.1.tool_call.id": "call_2",
                f"{requested}.1.tool_call.function.name": "get_forecast",
                f"{requested}.1.tool_call.function.arguments": json.dumps(BERLIN_ARGS),
                "llm.token_count.prompt": 120,
                "llm.token_count.completion": 30,
                "llm.token_count.total": 150,
            },
        ),
        span(
            PARIS_TOOL,
            "get_weather",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "tool.parameters": json.dumps({"type": "object", "properties": {"city": {}}}),
                "input.value": json.dumps(PARIS_ARGS),
                "input.mime_type": "application/json",
                "output.value": json.dumps(PARIS_RESULT),
                "output.mime_type": "application/json",
            },
        ),
        span(
            BERLIN_TOOL,
            "get_forecast",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_forecast",
                "input.value": json.dumps(BERLIN_ARGS),
                "input.mime_type": "application/json",
            },
            status_code=STATUS_ERROR,
            status_message=TIMEOUT,
            events=(exception(TIMEOUT),),
        ),
        span(
            SECOND_MODEL_CALL,
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": MODEL,
                **history,
                "llm.input_messages.2.message.role": "assistant",
                f"{asked}.0.tool_call.id": "call_1",
                f"{asked}.0.tool_call.function.name": "get_weather",
                f"{asked}.0.tool_call.function.arguments": json.dumps(PARIS_ARGS),
                f"{asked}.1.tool_call.id": "call_2",
                f"{asked}.1.tool_call.function.name": "get_forecast",
                f"{asked}.1.tool_call.function.arguments": json.dumps(BERLIN_ARGS),
                "llm.input_messages.3.message.role": "tool",
                "llm.input_messages.3.message.tool_call_id": "call_1",
                "llm.input_messages.3.message.content": json.dumps(PARIS_RESULT),
                "llm.input_messages.4.message.role": "tool",
                "llm.input_messages.4.message.tool_call_id": "call_2",
                "llm.input_messages.4.message.content": f"error: {TIMEOUT}",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": REPLY,
                "output.value": REPLY,
                "llm.token_count.prompt": 200,
                "llm.token_count.completion": 25,
            },
        ),
    ]


DIALECTS = {"genai": genai, "openllmetry": openllmetry, "openinference": openinference}
