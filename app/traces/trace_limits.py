"""The trace limits a server runs with, from its settings."""

from __future__ import annotations

from agentlasso.config import Settings
from agentlasso.traces.limits import TraceLimits


def trace_limits(settings: Settings) -> TraceLimits:
    """The counted limits of OTLP requests and the size of trace summaries, as configured."""
    return TraceLimits(
        values_per_request=settings.trace_max_values_per_request,
        values_per_attribute=settings.trace_max_values_per_attribute,
        attributes_per_span=settings.trace_max_attributes_per_span,
        value_depth=settings.trace_max_value_depth,
        summary_chars=settings.trace_max_summary_chars,
        summary_items=settings.trace_max_summary_items,
    )
