"""Alerts (contract section 18): a metric against warn and alert levels, the state it puts the
alert in, and the signed body a change of state posts to the webhook."""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

Metric = Literal["pass_rate", "check_fail_rate", "error_rate", "p95_latency_ms", "judge_cost_usd"]
AlertState = Literal["ok", "warn", "alert", "no_data"]
RATE_METRICS: frozenset[str] = frozenset({"pass_rate", "check_fail_rate", "error_rate"})
SIGNATURE_HEADER = "X-AgentLasso-Signature"
Threshold = Annotated[float, msgspec.Meta(ge=-1e12, le=1e12)]


class Level(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A level the metric crosses: below a value, or above one (exactly one of them)."""

    below: Threshold | None = None
    above: Threshold | None = None

    def crossed_by(self, value: float) -> bool:
        """Whether the value is past this level."""
        if self.below is not None:
            return value < self.below
        return self.above is not None and value > self.above

    def words(self) -> str:
        """The level as a person reads it."""
        return f"below {self.below:g}" if self.below is not None else f"above {self.above:g}"


class Alert(msgspec.Struct, frozen=True, kw_only=True):
    """An alert as stored (its webhook's secret still sealed)."""

    id: UUID
    project_id: UUID
    name: str
    rule_id: UUID | None
    dataset_id: UUID | None
    metric: Metric
    check_id: str | None
    window_s: int
    warn: Level | None
    alert: Level
    min_samples: int
    webhook_url: str
    sealed_secret: bytes
    created_at: datetime
    state: AlertState | None = None
    state_since: datetime | None = None
    last_value: float | None = None
    last_samples: int | None = None
    evaluated_at: datetime | None = None


class Reading(msgspec.Struct, frozen=True, kw_only=True):
    """The metric over the window: its value (None with no sample) and how many samples."""

    value: float | None
    samples: int


def level_problems(warn: Level | None, alert: Level, metric: Metric) -> list[tuple[str, str]]:
    """(pointer, detail) for levels that cannot be used: exactly one side each, the same side
    for both, the warn level reached first, a rate's levels between 0 and 1."""
    problems: list[tuple[str, str]] = []
    for name, level in (("warn", warn), ("alert", alert)):
        if level is not None and (level.below is None) == (level.above is None):
            problems.append((f"/{name}", f"Give {name} one of below or above."))
        elif level is not None and metric in RATE_METRICS:
            value = level.below if level.below is not None else level.above
            if value is not None and not 0 <= value <= 1:
                problems.append((f"/{name}", f"{metric} is a rate from 0 to 1."))
    if problems or warn is None:
        return problems
    if (warn.below is None) != (alert.below is None):
        return [("/warn", "warn and alert must both be below or both be above.")]
    if warn.below is not None and alert.below is not None and warn.below < alert.below:
        return [("/warn", "A warn level below the alert level would warn after it alerts.")]
    if warn.above is not None and alert.above is not None and warn.above > alert.above:
        return [("/warn", "A warn level above the alert level would warn after it alerts.")]
    return []


def state_of(reading: Reading, warn: Level | None, alert: Level, min_samples: int) -> AlertState:
    """The state a reading puts the alert in."""
    if reading.value is None or reading.samples < min_samples:
        return "no_data"
    if alert.crossed_by(reading.value):
        return "alert"
    if warn is not None and warn.crossed_by(reading.value):
        return "warn"
    return "ok"


def posts_change(before: AlertState | None, after: AlertState) -> bool:
    """Whether going from `before` to `after` is posted: every change of state; an alert's
    first evaluation only when it finds a problem (a new alert that is fine says nothing)."""
    if before is None:
        return after in ("warn", "alert")
    return before != after


def threshold_of(state: AlertState, warn: Level | None, alert: Level) -> Level | None:
    """The level the state crossed (none for ok and no_data)."""
    if state == "alert":
        return alert
    return warn if state == "warn" else None


def signature(secret: bytes, body: bytes) -> str:
    """The X-AgentLasso-Signature value: sha256= and the HMAC-SHA256 of the body, in hex."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def retry_delay_s(attempts: int) -> float:
    """How long after its `attempts`-th failed try a delivery is tried again: 1, 2, 4 ... s,
    at most 10 minutes."""
    return float(min(2 ** max(attempts - 1, 0), 600))


# A delivery failing this many times is given up (its failure stays in the history).
MAX_DELIVERY_ATTEMPTS = 10
