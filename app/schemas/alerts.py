"""Alerts on the wire (contract section 18)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from agentlasso.domain.alerts import AlertState, Level, Metric
from agentlasso.domain.stored_text import WITHOUT_NUL_PATTERN

AlertName = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=WITHOUT_NUL_PATTERN)]
# A minute to 30 days.
WindowSeconds = Annotated[int, msgspec.Meta(ge=60, le=2_592_000)]
WebhookUrl = Annotated[
    str, msgspec.Meta(min_length=1, max_length=2048, pattern=WITHOUT_NUL_PATTERN)
]
# Long enough to be a secret; the receiver keeps the same text.
WebhookSecret = Annotated[
    str, msgspec.Meta(min_length=16, max_length=256, pattern=WITHOUT_NUL_PATTERN)
]
CheckId = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=WITHOUT_NUL_PATTERN)]
SourceId = Annotated[str, msgspec.Meta(max_length=64)]


class AlertSource(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """What the alert watches: a trace rule's grades, or a dataset's runs (one of them)."""

    rule_id: SourceId | None = None
    dataset_id: SourceId | None = None


# A level is below a value or above one: exactly one of the two.
OneSided = Annotated[
    Level, msgspec.Meta(extra_json_schema={"minProperties": 1, "maxProperties": 1})
]


class AlertCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A new alert."""

    name: AlertName
    # Exactly one of rule_id and dataset_id.
    source: Annotated[
        AlertSource, msgspec.Meta(extra_json_schema={"minProperties": 1, "maxProperties": 1})
    ]
    metric: Metric
    # The check a check_fail_rate alert counts (its id in the rule or the dataset's cases).
    check_id: CheckId | None = None
    window_s: WindowSeconds
    warn: OneSided | None = None
    alert: OneSided
    min_samples: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1
    webhook_url: WebhookUrl
    webhook_secret: WebhookSecret


class AlertEvent(msgspec.Struct, kw_only=True):
    """A change of the alert's state, and how its webhook went."""

    at: datetime
    from_state: AlertState | None
    to_state: AlertState
    value: float | None
    samples: int
    # pending (being delivered or retried), delivered, failed (given up), not_sent (a new
    # alert's first state when it is fine: nothing to say).
    delivery: str
    attempts: int
    last_error: str | None
    delivered_at: datetime | None


class Alert(msgspec.Struct, kw_only=True):
    """An alert: what it watches, its levels, and its state (never its webhook's secret)."""

    id: str
    name: str
    source: AlertSource
    metric: Metric
    check_id: str | None
    window_s: int
    warn: Level | None
    alert: Level
    min_samples: int
    webhook_url: str
    created_at: datetime
    # None until the workers first evaluate it.
    state: AlertState | None
    state_since: datetime | None
    value: float | None
    samples: int | None
    evaluated_at: datetime | None
    history: list[AlertEvent] | None = None


class AlertPage(msgspec.Struct, kw_only=True):
    """The project's alerts, newest first."""

    alerts: list[Alert]


class TestDelivery(msgspec.Struct, kw_only=True):
    """How a test post to the webhook went."""

    __test__ = False

    delivered: bool
    status: int | None
    error: str | None
