"""An alert's state from a reading, which changes are posted, and the webhook's signature."""

from __future__ import annotations

from agentlasso.domain.alerts import (
    Level,
    Reading,
    level_problems,
    posts_change,
    retry_delay_s,
    signature,
    state_of,
)

WARN, ALERT = Level(below=0.9), Level(below=0.5)


def test_a_reading_is_ok_warn_or_alert_by_the_levels_it_crosses() -> None:
    assert state_of(Reading(value=0.95, samples=10), WARN, ALERT, 1) == "ok"
    assert state_of(Reading(value=0.9, samples=10), WARN, ALERT, 1) == "ok", "below, not at"
    assert state_of(Reading(value=0.7, samples=10), WARN, ALERT, 1) == "warn"
    assert state_of(Reading(value=0.2, samples=10), WARN, ALERT, 1) == "alert"
    assert state_of(Reading(value=0.7, samples=10), None, ALERT, 1) == "ok"
    latency = Level(above=2000)
    assert state_of(Reading(value=2500, samples=3), None, latency, 1) == "alert"


def test_too_few_samples_or_none_is_no_data() -> None:
    assert state_of(Reading(value=None, samples=0), WARN, ALERT, 1) == "no_data"
    assert state_of(Reading(value=0.1, samples=4), WARN, ALERT, 5) == "no_data"


def test_every_change_is_posted_and_a_first_state_only_when_it_is_a_problem() -> None:
    assert posts_change("ok", "warn") and posts_change("alert", "no_data")
    assert not posts_change("warn", "warn")
    assert posts_change(None, "alert") and posts_change(None, "warn")
    assert not posts_change(None, "ok") and not posts_change(None, "no_data")


def test_levels_must_be_one_sided_alike_and_in_order() -> None:
    assert level_problems(WARN, ALERT, "pass_rate") == []
    assert level_problems(None, Level(below=1, above=2), "p95_latency_ms")[0][0] == "/alert"
    assert level_problems(Level(above=0.1), ALERT, "pass_rate")[0][0] == "/warn"
    assert level_problems(Level(below=0.3), ALERT, "pass_rate")[0][0] == "/warn"
    assert level_problems(Level(above=3000), Level(above=2000), "p95_latency_ms")[0][0] == "/warn"
    assert level_problems(None, Level(above=1.5), "error_rate")[0][0] == "/alert"
    assert level_problems(None, Level(above=1.5), "judge_cost_usd") == []


def test_the_signature_is_hmac_sha256_of_the_body() -> None:
    # RFC 4231, test case 2.
    assert signature(b"Jefe", b"what do ya want for nothing?") == (
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )


def test_retries_back_off_doubling_to_ten_minutes() -> None:
    assert [retry_delay_s(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 8]
    assert retry_delay_s(30) == 600
