"""Counting a request's values: the same count whichever encoding carries it, and nothing a
client sends raises anything but a refusal that says why."""

from __future__ import annotations

import contextlib
import random

import pytest

from agentlasso.traces.limits import LimitExceeded, TraceLimits
from agentlasso.traces.otlp import Encoding, OtlpError, check
from tests.support.otlp import SpanSpec, json_request, new_span_id, new_trace_id, protobuf_request
from tests.support.otlp import refund_conversation as conversation


def _spans(arrays: int, width: int) -> list[SpanSpec]:
    trace_id = new_trace_id()
    attributes = {f"a{n}": [""] * width for n in range(arrays)}
    return [SpanSpec(trace_id, new_span_id(), "s", 0, 1, attributes=attributes)]


@pytest.mark.parametrize(
    ("spans", "limits", "refused"),
    [
        (conversation(), TraceLimits(), None),
        # 3 attributes of 10 elements each, and the resource's service.name.
        (_spans(3, 10), TraceLimits(values_per_request=34), None),
        (_spans(3, 10), TraceLimits(values_per_request=33), "VALUES_PER_REQUEST"),
        (_spans(1, 10), TraceLimits(values_per_attribute=11), None),
        (_spans(1, 10), TraceLimits(values_per_attribute=10), "VALUES_PER_ATTRIBUTE"),
        (_spans(5, 0), TraceLimits(attributes_per_span=4), "ATTRIBUTES_PER_SPAN"),
    ],
)
def test_both_encodings_count_the_same_values(
    spans: list[SpanSpec], limits: TraceLimits, refused: str | None
) -> None:
    for body, encoding in ((protobuf_request(spans), Encoding.PROTOBUF),
                           (json_request(spans), Encoding.JSON)):  # fmt: skip
        if refused is None:
            assert check(body, encoding, limits, 10_000).span_count == len(spans)
            continue
        with pytest.raises(LimitExceeded, match=refused):
            check(body, encoding, limits, 10_000)


@pytest.mark.parametrize("seed", range(200))
def test_damaged_protobuf_is_refused_never_crashes(seed: int) -> None:
    generator = random.Random(seed)
    body = bytearray(protobuf_request(conversation()))
    for _ in range(generator.randint(1, 8)):
        body[generator.randrange(len(body))] = generator.randrange(256)
    cut = body[: generator.randrange(1, len(body) + 1)]
    with contextlib.suppress(OtlpError, LimitExceeded):
        check(bytes(cut), Encoding.PROTOBUF, TraceLimits(), 10_000)
