"""W3C Trace Context for calls to agents (contract section 14): each call is its own trace, so
the agent's spans of that call can be found by the id the platform stored with the result."""

from __future__ import annotations

import os
from typing import Annotated

import msgspec

# A W3C trace id as a client posts it: 32 lowercase hex digits.
TraceId = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]


def new_traceparent() -> tuple[str, bytes]:
    """A fresh trace context for one call: its trace id, and the `traceparent` value (this call
    as the parent span, sampled). Every try of the call carries the same one."""
    random = os.urandom(24).hex()
    return random[:32], b"00-%s-%s-01" % (random[:32].encode(), random[32:].encode())
