"""`agentlasso ci` asking for a simulated user's message again after a 429 or a 503 with
Retry-After, within its bounds (app/cli/conversations.py ask_with_retries)."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.cli.conversations import USER_TURN_TRIES, USER_TURN_WAIT_S, ask_with_retries
from agentlasso.client import ClientError, NextUserTurn, PlatformUnavailable

ANSWER = NextUserTurn(user="It is A-17", done=False, reason="Gives the order number.")


def quota(wait_s: float | None) -> ClientError:
    return ClientError(429, "Your project may ask for 600 simulated user turns a minute", None,
                       retry_after_s=wait_s)  # fmt: skip


def outage(wait_s: float | None) -> PlatformUnavailable:
    return PlatformUnavailable("HTTP 503", status=503, retry_after_s=wait_s)


class Platform:
    """Answers each ask with the next of its refusals, then with ANSWER; a clock that the
    waits move on."""

    def __init__(self, *refusals: Exception) -> None:
        self.refusals = list(refusals)
        self.asked = 0
        self.now_s = 0.0
        self.waits_s: list[float] = []

    async def ask(self, transcript: list[dict[str, Any]]) -> NextUserTurn:
        self.asked += 1
        if self.refusals:
            raise self.refusals.pop(0)
        return ANSWER

    async def sleep(self, wait_s: float) -> None:
        self.waits_s.append(wait_s)
        self.now_s += wait_s

    def clock(self) -> float:
        return self.now_s


async def ask(platform: Platform) -> NextUserTurn:
    return await ask_with_retries(
        platform.ask, [{"role": "user", "content": "hi"}],
        sleep=platform.sleep, clock=platform.clock,
    )  # fmt: skip


async def test_a_429_and_a_503_are_asked_again_after_their_retry_after() -> None:
    platform = Platform(quota(1), outage(30), quota(2))
    assert await ask(platform) == ANSWER
    assert platform.asked == 4
    assert platform.waits_s == [1, 30, 2]


@pytest.mark.parametrize(
    "refusal",
    [
        quota(None),
        outage(None),
        ClientError(409, "No model is configured to play the simulated user"),
        ClientError(422, "Test case x is not in this run.", retry_after_s=1),
        PlatformUnavailable("HTTP 500", status=500, retry_after_s=1),
        PlatformUnavailable("POST /eval-runs/x/next-user-turn: ConnectError()"),
    ],
    ids=["429 without Retry-After", "503 without Retry-After", "409", "422", "500", "no answer"],
)
async def test_other_errors_and_answers_without_retry_after_are_final(refusal: Exception) -> None:
    platform = Platform(refusal, quota(1))
    with pytest.raises(type(refusal)) as raised:
        await ask(platform)
    assert raised.value is refusal
    assert platform.asked == 1 and platform.waits_s == []


async def test_at_most_five_tries_then_the_last_refusal_is_raised() -> None:
    refusals = [quota(1) for _ in range(USER_TURN_TRIES + 3)]
    platform = Platform(*refusals)
    with pytest.raises(ClientError) as raised:
        await ask(platform)
    assert platform.asked == USER_TURN_TRIES == 5
    assert platform.waits_s == [1, 1, 1, 1]
    assert raised.value is refusals[USER_TURN_TRIES - 1]


async def test_no_try_starts_past_120_s_after_the_first() -> None:
    assert USER_TURN_WAIT_S == 120
    platform = Platform(outage(50), outage(50), outage(30))
    with pytest.raises(PlatformUnavailable) as raised:
        await ask(platform)
    # A third wait of 30 s would start a try at 130 s.
    assert platform.waits_s == [50, 50] and platform.asked == 3
    assert raised.value.retry_after_s == 30
    just = Platform(outage(60), quota(60))
    assert await ask(just) == ANSWER
    assert just.waits_s == [60, 60] and just.asked == 3


async def test_a_wait_past_what_is_left_gives_up_at_once() -> None:
    platform = Platform(outage(100), outage(30))
    with pytest.raises(PlatformUnavailable) as raised:
        await ask(platform)
    assert raised.value.retry_after_s == 30
    assert platform.waits_s == [100] and platform.asked == 2
    spent = Platform(outage(36_000))  # the server's daily budget spent: until the next day
    with pytest.raises(PlatformUnavailable):
        await ask(spent)
    assert spent.waits_s == [] and spent.asked == 1
