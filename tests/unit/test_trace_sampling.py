"""A trace rule's sample: by a hash of the trace id, so a lower rate takes a subset."""

from __future__ import annotations

import secrets

from agentlasso.domain.trace_rules import Candidate, TraceFilter, passes_filter, sampled

TRACE_IDS = [secrets.token_hex(16) for _ in range(20_000)]


def test_a_lower_rate_takes_a_subset_of_a_higher_rates_traces() -> None:
    taken = {rate: {t for t in TRACE_IDS if sampled(t, rate)} for rate in (0.01, 0.1, 0.5, 0.9)}
    assert taken[0.01] <= taken[0.1] <= taken[0.5] <= taken[0.9]


def test_a_rate_takes_about_that_share_of_random_trace_ids() -> None:
    for rate in (0.05, 0.1, 0.5):
        share = sum(sampled(t, rate) for t in TRACE_IDS) / len(TRACE_IDS)
        assert abs(share - rate) < 0.015, (rate, share)


def test_the_sample_is_the_same_every_time_and_the_ends_take_all_or_none() -> None:
    first = [sampled(t, 0.3) for t in TRACE_IDS[:1000]]
    assert first == [sampled(t, 0.3) for t in TRACE_IDS[:1000]]
    assert all(sampled(t, 1.0) for t in TRACE_IDS[:100])
    assert not any(sampled(t, 0.0) for t in TRACE_IDS[:100])


def _candidate(**fields: object) -> Candidate:
    base: dict[str, object] = {
        "trace_id": "a" * 32, "updated_at": None, "span_count": 3, "name": "invoke_agent bot",
        "tool_names": ("orders.track",), "has_error": False,
    }  # fmt: skip
    return Candidate(**(base | fields))  # type: ignore[arg-type]


def test_each_part_of_a_filter_must_match() -> None:
    trace = _candidate()
    assert passes_filter(TraceFilter(), trace)
    assert passes_filter(TraceFilter(name="invoke_agent bot", tool="orders.track"), trace)
    assert not passes_filter(TraceFilter(name="invoke_agent other"), trace)
    assert not passes_filter(TraceFilter(tool="orders.refund"), trace)
    assert not passes_filter(TraceFilter(errors_only=True), trace)
    assert passes_filter(TraceFilter(errors_only=True), _candidate(has_error=True))
