"""A stored summary joined with the summary of later spans reads like the whole trace's, in
each dialect, whichever way the spans were split into requests; and cuts say what they cut."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import msgspec
import pytest

from agentlasso.traces.limits import TraceLimits
from agentlasso.traces.spans import Span
from agentlasso.traces.summary import TraceSummary, summarise
from agentlasso.traces.summary_cuts import cut_mark, cut_span, cut_summary
from agentlasso.traces.summary_merge import merged
from tests.unit.traces.conversations import genai, openinference, openllmetry

Conversation = Callable[[], list[Span]]
DIALECTS = [genai, openllmetry, openinference]


def _in_parts(spans: list[Span], cuts: list[int]) -> TraceSummary:
    """The summary a worker keeps when the spans arrive in parts split at `cuts`."""
    bounds = [0, *cuts, len(spans)]
    parts = [spans[start:stop] for start, stop in itertools.pairwise(bounds)]
    summary = summarise(parts[0])
    for part in parts[1:]:
        summary = merged(summary, summarise(part))
    return summary


@pytest.mark.parametrize("conversation", DIALECTS)
@pytest.mark.parametrize("split", ["halves", "one by one"])
def test_a_trace_sent_in_parts_sums_up_like_the_whole(
    conversation: Conversation, split: str
) -> None:
    spans = conversation()
    cuts = [len(spans) // 2] if split == "halves" else list(range(1, len(spans)))
    whole, joined = summarise(spans), _in_parts(spans, cuts)
    assert joined.span_count == whole.span_count
    assert joined.started_ns == whole.started_ns
    assert joined.duration_ms == whole.duration_ms
    assert joined.usage == whole.usage
    assert joined.input == whole.input
    assert joined.output == whole.output
    assert joined.name == whole.name
    assert [call.name for call in joined.tool_calls] == [call.name for call in whole.tool_calls]


def test_a_part_with_no_new_span_changes_nothing() -> None:
    before = summarise(genai())
    assert merged(before, TraceSummary(name="")) is before


def test_a_summary_cut_says_each_cut_and_is_not_cut_twice() -> None:
    long = TraceSummary(name="n", input="q" * 50, output="r" * 5, span_count=1)
    limits = TraceLimits(summary_chars=10, summary_items=1)
    once = cut_summary(long, limits)
    assert once.input == "q" * 10 + cut_mark(10)
    assert once.output == "r" * 5
    assert once.cuts == ("the input cut at 10 of 50 characters",)
    assert cut_summary(once, limits).input == once.input


def test_a_stored_span_keeps_short_values_and_cuts_long_ones() -> None:
    span = genai()[0]
    extra = {"big": "b" * 100, "rows": list(range(50))}
    span = msgspec.structs.replace(span, attributes={**span.attributes, **extra})
    stored = cut_span(span, 20)
    assert stored.attributes["big"] == "b" * 20 + cut_mark(20)
    assert stored.attributes["rows"].endswith(cut_mark(20))
    small = {key: value for key, value in span.attributes.items() if len(str(value)) < 20}
    assert all(stored.attributes[key] == value for key, value in small.items())
