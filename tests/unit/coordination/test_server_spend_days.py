"""The server key's budget is counted per UTC day: which day a moment is, and when the next one
starts (a 429's Retry-After)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentlasso.coordination.server_spend import budget_spent_reason, day_of, seconds_to_next_day


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("moment", "day", "left_s"),
    [
        ("2026-12-01T00:00:00", "2026-12-01", 86_400),
        ("2026-12-01T23:59:59", "2026-12-01", 1),
        ("2026-12-01T23:59:59.900", "2026-12-01", 1),
        ("2026-12-02T12:00:00", "2026-12-02", 43_200),
    ],
)
def test_a_moment_falls_on_its_utc_day(moment: str, day: str, left_s: int) -> None:
    assert day_of(at(moment)) == day
    assert seconds_to_next_day(at(moment)) == left_s


def test_the_reason_names_the_budget_and_the_way_out() -> None:
    reason = budget_spent_reason(2.5)
    assert "USD 2.5 a day" in reason and "own Anthropic key" in reason and "00:00 UTC" in reason
