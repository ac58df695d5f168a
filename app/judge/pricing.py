"""Token usage and what it costs (pure; the prices are configuration, passed in)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from agentlasso.domain.judging import Usage

# Anthropic's multipliers on the input price for prompt-cache reads and 5-minute cache writes.
CACHE_READ_FACTOR = 0.1
CACHE_WRITE_FACTOR = 1.25

_DATED_SNAPSHOT = re.compile(r"-\d{8}$")


def cost_usd(usage: Usage, model: str, prices: Mapping[str, tuple[float, float]]) -> float:
    """The cost in US dollars, from prices per million tokens (input, output) by model."""
    input_per_m, output_per_m = price_for(model, prices)
    input_equivalent = (
        usage.input_tokens
        + usage.cache_read_input_tokens * CACHE_READ_FACTOR
        + usage.cache_creation_input_tokens * CACHE_WRITE_FACTOR
    )
    return (input_equivalent * input_per_m + usage.output_tokens * output_per_m) / 1_000_000


def price_for(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    """The model's prices: its own entry, else its alias's when it names a dated snapshot."""
    # Responses may name a dated snapshot ("claude-haiku-4-5-20251001") of a priced alias.
    alias = _DATED_SNAPSHOT.sub("", model)
    for name in (model, alias):
        if name in prices:
            return prices[name]
    raise KeyError(f"no price for the judge model {model!r}")
