"""The agent's steps a case card shows from its spans: GenAI and OpenInference tool and model
spans on the trace's bar, everything else left out."""

from __future__ import annotations

from agentlasso.traces.spans import STATUS_ERROR, Span
from agentlasso.web.agent_steps import agent_steps

TRACE = "a" * 32


def span(span_id: str, start_ms: int, end_ms: int, **attributes: object) -> Span:
    return Span(
        trace_id=TRACE, span_id=span_id * 16, name=f"span {span_id}",
        start_ns=start_ms * 1_000_000, end_ns=end_ms * 1_000_000, attributes=dict(attributes),
    )  # fmt: skip


def test_tool_and_model_spans_are_steps_placed_on_the_whole_trace() -> None:
    spans = [
        span("1", 0, 1000, **{"gen_ai.operation.name": "invoke_agent"}),
        span("2", 100, 600, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m1",
                               "gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 5}),
        span("3", 600, 900, **{"gen_ai.tool.name": "orders.lookup",
                               "gen_ai.tool.call.arguments": '{"order": 1}'}),
    ]  # fmt: skip

    model, tool = agent_steps(spans)

    assert (model["kind"], model["name"], model["tokens"]) == (
        "model",
        "m1",
        "1,200 tokens in, 5 out",
    )
    assert (model["bar_x"], model["bar_width"], model["took"]) == ("10.00", "50.00", "500 ms")
    assert (tool["kind"], tool["name"], tool["number"]) == ("tool", "orders.lookup", 2)
    assert tool["arguments"] == '{\n  "order": 1\n}' and tool["result"] is None
    assert "starts 600 ms into the trace" in tool["described"]


def test_openinference_spans_are_read_and_an_error_is_said() -> None:
    llm = span("1", 0, 10, **{"openinference.span.kind": "LLM", "llm.model_name": "m2",
                              "llm.token_count.prompt": 3})  # fmt: skip
    failed = Span(
        trace_id=TRACE, span_id="2" * 16, name="refund", start_ns=0, end_ns=10_000_000,
        status_code=STATUS_ERROR, status_message="card declined",
        attributes={"openinference.span.kind": "TOOL", "tool.name": "stripe.refund",
                    "output.value": "declined"},
    )  # fmt: skip

    model, tool = agent_steps([llm, failed])

    assert (model["name"], model["tokens"]) == ("m2", "3 tokens in, 0 out")
    assert (tool["name"], tool["error"], tool["result"]) == (
        "stripe.refund",
        "card declined",
        "declined",
    )


def test_no_spans_or_none_of_those_kinds_are_no_steps() -> None:
    assert agent_steps([]) == []
    assert agent_steps([span("1", 0, 5, **{"http.method": "POST"})]) == []
