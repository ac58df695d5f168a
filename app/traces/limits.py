"""What reading one OTLP request may cost, counted in what costs: values, not bytes."""

from __future__ import annotations

import msgspec


class TraceLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The counted limits of a request, and how much of a trace its summary keeps.

    A value is an attribute, each element of an array or kvlist value, or an event: each is
    an object to build when the request is read, whatever few bytes it took on the wire.
    """

    values_per_request: int = 100_000
    values_per_attribute: int = 10_000
    attributes_per_span: int = 128
    value_depth: int = 16
    summary_chars: int = 10_000
    summary_items: int = 100


class LimitExceeded(Exception):
    """A request holds more than a counted limit allows: the message names the limit."""

    def __init__(self, message: str, *, too_deep: bool = False) -> None:
        super().__init__(message)
        # Nesting is a shape the request may not have (400); the other limits are sizes (413).
        self.too_deep = too_deep


class ValueCounter:
    """Counts a request's values as they are met, refusing the first one past a limit."""

    def __init__(self, limits: TraceLimits) -> None:
        self.limits = limits
        self.values = 0

    def attributes(self, count: int) -> None:
        """One span's (event's, link's, resource's) attributes: at most attributes_per_span."""
        if count > self.limits.attributes_per_span:
            raise LimitExceeded(
                f"a span, event, link or resource may carry at most "
                f"{self.limits.attributes_per_span} attributes (AGENTLASSO_TRACE_MAX_ATTRIBUTES_"
                f"PER_SPAN); one here has {count}"
            )

    def add(self, count: int) -> None:
        """Count values; past values_per_request, refused."""
        self.values += count
        if self.values > self.limits.values_per_request:
            raise LimitExceeded(
                f"a request may hold at most {self.limits.values_per_request} values "
                f"(AGENTLASSO_TRACE_MAX_VALUES_PER_REQUEST: attributes, their array and kvlist "
                f"elements, and events); this one holds more"
            )

    def attribute(self, values_in_it: int) -> None:
        """One attribute's values, itself included: at most values_per_attribute."""
        if values_in_it > self.limits.values_per_attribute:
            raise LimitExceeded(
                f"one attribute may hold at most {self.limits.values_per_attribute} values "
                f"(AGENTLASSO_TRACE_MAX_VALUES_PER_ATTRIBUTE); one here holds more"
            )

    def depth(self, depth: int) -> None:
        """How deep an array or kvlist value nests: at most value_depth."""
        if depth > self.limits.value_depth:
            raise LimitExceeded(
                f"array and kvlist values may nest at most {self.limits.value_depth} deep "
                f"(AGENTLASSO_TRACE_MAX_VALUE_DEPTH); one here nests deeper",
                too_deep=True,
            )
