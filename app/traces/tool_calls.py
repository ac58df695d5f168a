"""A trace's tool calls: from tool spans, and from model requests no tool span recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from agentlasso.traces.messages import ToolRequest
from agentlasso.traces.tree import ReadSpan
from agentlasso.traces.values import structure_or_text


class TraceToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call, in the order the calls started."""

    name: str
    # As recorded: a JSON object when the arguments parse as one, else the text.
    arguments: Any = None
    result: Any = None
    error: str | None = None
    # The tool span; None when only the model's request for the call was recorded.
    span_id: str | None = None
    started_ns: int = 0
    duration_ms: int | None = None


class _Request(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call a model asked for, with the model call that asked."""

    request: ToolRequest
    model_call: ReadSpan


def tool_calls(spans: Sequence[ReadSpan]) -> tuple[TraceToolCall, ...]:
    """Every tool call once, in the order the calls started (spans given in start order)."""
    tool_spans = [read for read in spans if read.reading.kind == "tool_call"]
    requests = _requests(spans)
    responses = _responses(spans)
    pairs = _pair(tool_spans, requests)
    request_of_span = {span_index: requests[index] for index, span_index in pairs.items()}
    calls = [
        _from_span(read, request_of_span.get(index), responses)
        for index, read in enumerate(tool_spans)
    ]
    starts = _request_starts(requests, pairs, tool_spans)
    calls.extend(
        _from_request(request, starts[index], responses)
        for index, request in enumerate(requests)
        if index not in pairs
    )
    # A stable sort: at equal starts a tool span stays before a request and spans keep their order.
    return tuple(sorted(calls, key=lambda call: call.started_ns))


def _requests(spans: Sequence[ReadSpan]) -> list[_Request]:
    """Tool calls the model calls asked for, in the order the model calls ended, each id once."""
    model_calls = sorted(
        (read for read in spans if read.reading.kind == "model_call"),
        key=lambda read: read.span.end_ns,
    )
    requests: list[_Request] = []
    seen_ids: set[str] = set()
    for read in model_calls:
        for message in read.reading.output_messages:
            for request in message.tool_requests:
                if request.call_id in seen_ids:
                    continue
                if request.call_id:
                    seen_ids.add(request.call_id)
                requests.append(_Request(request=request, model_call=read))
    return requests


def _responses(spans: Sequence[ReadSpan]) -> dict[str, str]:
    """Tool responses sent back to a model, by the id of the call they answer."""
    responses: dict[str, str] = {}
    for read in spans:
        for message in read.reading.input_messages + read.reading.output_messages:
            if message.role == "tool" and message.call_id:
                responses.setdefault(message.call_id, message.text)
    return responses


def _pair(tool_spans: Sequence[ReadSpan], requests: Sequence[_Request]) -> dict[int, int]:
    """Requests that a tool span recorded, as {request index: tool span index}.

    By call id where both sides have one; else by name, in order. Two different ids never pair.
    """
    by_call_id = {
        read.reading.tool_call_id: index
        for index, read in reversed(list(enumerate(tool_spans)))
        if read.reading.tool_call_id
    }
    pairs: dict[int, int] = {}
    for index, item in enumerate(requests):
        span_index = by_call_id.get(item.request.call_id or "")
        if span_index is not None and span_index not in pairs.values():
            pairs[index] = span_index
    taken = set(pairs.values())
    for index, item in enumerate(requests):
        if index in pairs:
            continue
        span_index = _same_name(tool_spans, item.request, taken)
        if span_index is not None:
            pairs[index] = span_index
            taken.add(span_index)
    return pairs


def _request_starts(
    requests: Sequence[_Request], pairs: dict[int, int], tool_spans: Sequence[ReadSpan]
) -> list[int]:
    """When each requested call started: its span's start, else an estimate.

    A call with no span started no earlier than the model call's end, nor before the calls
    the same model call asked for before it.
    """
    floors: dict[str, int] = {}
    starts: list[int] = []
    for index, item in enumerate(requests):
        model_call = item.model_call.span
        floor = max(floors.get(model_call.span_id, 0), model_call.end_ns)
        if index in pairs:
            floor = max(floor, tool_spans[pairs[index]].span.start_ns)
        floors[model_call.span_id] = floor
        starts.append(floor)
    return starts


def _same_name(tool_spans: Sequence[ReadSpan], request: ToolRequest, taken: set[int]) -> int | None:
    """The first free tool span of the request's name whose call id does not contradict it."""
    for index, read in enumerate(tool_spans):
        if index in taken or read.reading.tool_name != request.name:
            continue
        if request.call_id and read.reading.tool_call_id:
            continue
        return index
    return None


def _from_span(
    read: ReadSpan, request: _Request | None, responses: dict[str, str]
) -> TraceToolCall:
    """A tool call from its span, completed by the model's request and the response sent back."""
    reading, span = read.reading, read.span
    call_id = reading.tool_call_id or (request.request.call_id if request else None)
    arguments = reading.arguments
    if arguments is None and request is not None:
        arguments = request.request.arguments
    result = reading.result
    # A failed call's response to the model is its error message, already in `error`.
    if result is None and reading.error is None and call_id in responses:
        result = structure_or_text(responses[call_id or ""])
    return TraceToolCall(
        name=reading.tool_name or "unknown",
        arguments=arguments,
        result=result,
        error=reading.error,
        span_id=span.span_id,
        started_ns=span.start_ns,
        duration_ms=_duration_ms(span.start_ns, span.end_ns),
    )


def _from_request(item: _Request, started_ns: int, responses: dict[str, str]) -> TraceToolCall:
    """A tool call known only from the model's request."""
    call_id = item.request.call_id
    result = responses.get(call_id) if call_id else None
    return TraceToolCall(
        name=item.request.name,
        arguments=item.request.arguments,
        result=structure_or_text(result),
        started_ns=started_ns,
    )


def _duration_ms(start_ns: int, end_ns: int) -> int | None:
    """Whole milliseconds between two instants, None when either is missing or out of order."""
    if start_ns <= 0 or end_ns < start_ns:
        return None
    return (end_ns - start_ns + 500_000) // 1_000_000
