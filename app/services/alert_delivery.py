"""What an alert's webhook is sent: the JSON body of a change of state (or of a test), signed
with the alert's secret, posted through the same address guard as agent calls."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import msgspec

from agentlasso.agents import AgentClient
from agentlasso.domain.alerts import (
    SIGNATURE_HEADER,
    Alert,
    AlertState,
    Level,
    Reading,
    signature,
    threshold_of,
)
from agentlasso.secrets_box import unseal

# A receiver that has not answered by then has failed this attempt.
POST_TIMEOUT_S = 10.0
EVENT_HEADER = "X-AgentLasso-Event"
DELIVERY_HEADER = "X-AgentLasso-Delivery"


class Named(msgspec.Struct, frozen=True, kw_only=True):
    """What the alert watches: its kind, id and name."""

    type: str
    id: str
    name: str


class Link(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A failing trace or case, and where a person reads it."""

    url: str
    trace_id: str | None = None
    run_id: str | None = None
    test_case_id: str | None = None


class Payload(msgspec.Struct, frozen=True, kw_only=True):
    """The webhook's body."""

    event: str
    alert: dict[str, str]
    source: Named | None
    metric: str
    check_id: str | None
    state: AlertState
    previous_state: AlertState | None
    value: float | None
    samples: int
    min_samples: int
    threshold: Level | None
    window_s: int
    at: datetime
    failing: tuple[Link, ...] = ()


def _url(public_url: str | None, path: str) -> str:
    """An absolute link when the server knows where people reach it, else the path."""
    return (public_url or "").rstrip("/") + path


def failing_links(
    public_url: str | None,
    traces: Sequence[str] = (),
    cases: Sequence[tuple[UUID, UUID]] = (),
) -> tuple[Link, ...]:
    """Links to the failing traces, or the failing cases of the dataset's runs."""
    return tuple(
        Link(url=_url(public_url, f"/traces/{trace_id}"), trace_id=trace_id) for trace_id in traces
    ) + tuple(
        Link(
            url=_url(public_url, f"/runs/{run_id}/cases/{case_id}"),
            run_id=str(run_id),
            test_case_id=str(case_id),
        )
        for run_id, case_id in cases
    )


def change_payload(
    alert: Alert,
    source: Named,
    change: tuple[AlertState | None, AlertState],
    reading: Reading,
    context: tuple[datetime, str | None, tuple[Link, ...]],
) -> bytes:
    """The body of a change of state: the alert, what it watches, the metric, its value, the
    level crossed and links to what failed."""
    at, public_url, failing = context
    before, after = change
    return msgspec.json.encode(
        Payload(
            event="alert.state_changed",
            alert=_alert_of(alert, public_url),
            source=source,
            metric=alert.metric,
            check_id=alert.check_id,
            state=after,
            previous_state=before,
            value=reading.value,
            samples=reading.samples,
            min_samples=alert.min_samples,
            threshold=threshold_of(after, alert.warn, alert.alert),
            window_s=alert.window_s,
            at=at,
            failing=failing,
        )
    )


def test_payload(alert: Alert, at: datetime, public_url: str | None) -> bytes:
    """The body of a test post: shaped as a change would be, with event alert.test."""
    return msgspec.json.encode(
        Payload(
            event="alert.test",
            alert=_alert_of(alert, public_url),
            source=None,
            metric=alert.metric,
            check_id=alert.check_id,
            state=alert.state or "no_data",
            previous_state=alert.state,
            value=alert.last_value,
            samples=alert.last_samples or 0,
            min_samples=alert.min_samples,
            threshold=None,
            window_s=alert.window_s,
            at=at,
        )
    )


def _alert_of(alert: Alert, public_url: str | None) -> dict[str, str]:
    return {"id": str(alert.id), "name": alert.name, "url": _url(public_url, f"/alerts/{alert.id}")}


async def post_signed(
    client: AgentClient,
    secret_key: bytes,
    alert: Alert | tuple[UUID, str, bytes],
    body: bytes,
    delivery: str,
) -> int | str:
    """Post the body signed with the alert's secret: the receiver's status, or why none."""
    alert_id, url, sealed = (
        (alert.id, alert.webhook_url, alert.sealed_secret) if isinstance(alert, Alert) else alert
    )
    secret = unseal(secret_key, sealed, alert_id.bytes)
    headers = {
        SIGNATURE_HEADER: signature(secret, body),
        EVENT_HEADER: "alert.test" if delivery == "test" else "alert.state_changed",
        DELIVERY_HEADER: delivery,
    }
    return await client.post(url, headers, body, POST_TIMEOUT_S)
