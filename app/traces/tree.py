"""The spans of one trace read and placed in their tree: unique, ordered by start, with depths."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from agentlasso.traces.dialects import SpanReading, read_span
from agentlasso.traces.spans import Span


class ReadSpan(msgspec.Struct, frozen=True, kw_only=True):
    """A span with what it says and where it sits in the trace."""

    span: Span
    reading: SpanReading
    # Ancestors present among the spans; a missing parent or a cycle ends the count.
    depth: int
    # No parent, or a parent that has not arrived (or never will).
    is_root: bool


def read_trace(spans: Sequence[Span]) -> list[ReadSpan]:
    """The trace's spans read, one per span id, in start order."""
    unique = _unique(spans)
    depths = _depths(unique)
    ordered = sorted(unique.values(), key=lambda span: (span.start_ns, span.span_id))
    return [
        ReadSpan(
            span=span,
            reading=read_span(span),
            depth=depths[span.span_id],
            is_root=not span.parent_span_id or span.parent_span_id not in unique,
        )
        for span in ordered
    ]


def _unique(spans: Sequence[Span]) -> dict[str, Span]:
    """One span per id; an exporter's retry can send a span twice, and the first copy is kept."""
    unique: dict[str, Span] = {}
    for span in spans:
        unique.setdefault(span.span_id, span)
    return unique


def _depths(spans: dict[str, Span]) -> dict[str, int]:
    """Each span's depth, walking each chain of parents once and stopping at a cycle."""
    depths: dict[str, int] = {}
    for start in spans:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node in spans and node not in depths and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = spans[node].parent_span_id
        # A known ancestor continues its count; a missing parent or a cycle starts one at zero.
        depth = depths.get(node, -1) if node is not None else -1
        for span_id in reversed(path):
            depth += 1
            depths[span_id] = depth
    return depths
