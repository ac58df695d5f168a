"""A stored trace summary brought up to date with the spans that just arrived, alone.

Summing a trace up again from all its spans made every later span cost the whole trace: a
trace of ten thousand spans sent one at a time was read back ten thousand times. The stored
summary already says what the earlier spans did, so the new spans are summed up by themselves
and the two summaries joined: totals add up, the earliest start and latest end win, the tool
calls join in start order, and the reply and conversation come from whichever side ended
later. What only the whole tree could tell (a root that arrives after its children) is read
from what each side saw.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentlasso.traces.summary import TraceSummary, TraceToolCall, TraceUsage


def merged(before: TraceSummary, new: TraceSummary) -> TraceSummary:
    """The summary of a trace's earlier spans (`before`) and of its new ones, joined."""
    if new.span_count == 0:
        return before
    started_ns = _earliest(before.started_ns, new.started_ns)
    ended_ns = max(_end(before), _end(new))
    new_is_later = _end(new) >= _end(before)
    return msgspec.structs.replace(
        before,
        # The name is the earliest root's: the side that started first saw it.
        name=new.name if _starts_first(new, before) or not before.name else before.name,
        input=before.input if before.input is not None else new.input,
        output=_later(before.output, new.output, new_is_later),
        messages=_later(before.messages or None, new.messages or None, new_is_later) or (),
        tool_calls=_tool_calls(before.tool_calls, new.tool_calls),
        model=_later(before.model, new.model, new_is_later),
        usage=_usage(before.usage, new.usage),
        error=before.error if before.error is not None else new.error,
        started_ns=started_ns,
        duration_ms=(ended_ns - started_ns + 500_000) // 1_000_000 if started_ns else 0,
        span_count=before.span_count + new.span_count,
        # The earlier spans' conversation stands: a trace is a turn of one conversation.
        conversation_id=before.conversation_id or new.conversation_id,
        cuts=tuple(dict.fromkeys((*before.cuts, *new.cuts))),
    )


def _earliest(first: int, second: int) -> int:
    starts = [start for start in (first, second) if start > 0]
    return min(starts, default=0)


def _end(summary: TraceSummary) -> int:
    return summary.started_ns + summary.duration_ms * 1_000_000


def _starts_first(new: TraceSummary, before: TraceSummary) -> bool:
    return new.started_ns > 0 and (before.started_ns == 0 or new.started_ns < before.started_ns)


def _later(before: Any, new: Any, new_is_later: bool) -> Any:
    """The new side's value when it ended later (or the old one has none)."""
    if new is None:
        return before
    return new if new_is_later or before is None else before


def _tool_calls(
    before: tuple[TraceToolCall, ...], new: tuple[TraceToolCall, ...]
) -> tuple[TraceToolCall, ...]:
    """Both sides' calls in start order; a call known only from the model's request before is
    the new side's span of that tool, when one arrived."""
    new_spans = {call.name: call for call in new if call.span_id is not None}
    kept = []
    for call in before:
        if call.span_id is None and call.name in new_spans:
            continue  # its span came now: the call is the new side's
        kept.append(call)
    taken = {call.name for call in before if call.span_id is not None}
    joined = kept + [call for call in new if call.span_id is not None or call.name not in taken]
    return tuple(sorted(joined, key=lambda call: call.started_ns))


def _usage(before: TraceUsage | None, new: TraceUsage | None) -> TraceUsage | None:
    """Model calls' tokens add up; an agent's totals count only while no model call's do."""
    if before is None or new is None:
        return before or new
    if not (before.from_model_calls and new.from_model_calls):
        return new if new.from_model_calls else before
    return TraceUsage(
        input_tokens=before.input_tokens + new.input_tokens,
        output_tokens=before.output_tokens + new.output_tokens,
    )
