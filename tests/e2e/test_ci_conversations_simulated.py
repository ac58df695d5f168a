"""`agentlasso ci` playing a conversation with a simulated user through the real
POST /api/v1/eval-runs/{run_id}/next-user-turn (contract section 13): `agentlasso api` as its
own process, the fake Anthropic API playing the user's model, the conversational agent of
tests/support/ci_conversation_agent.py keeping its state by conversation_id.

Each case has a persona of its own: the fake answers by that marker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.e2e.test_ci_command import run_ci
from tests.e2e.test_ci_conversations import dataset_of, stored_results
from tests.support.ci_conversation_agent import ConversationAgent, running_conversation_agent
from tests.support.fake_anthropic import (
    FAKE_API_KEY,
    USAGE,
    FakeAnthropic,
    goal_reached,
    is_user_turn_request,
    overloaded,
    user_goes_on,
)
from tests.support.processes import api_process

# claude-sonnet-5-5 at 2 / 10 dollars per million tokens.
CALL_COST_USD = (USAGE["input_tokens"] * 2 + USAGE["output_tokens"] * 10) / 1_000_000


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="module")
def api_url(settings: Settings, fake: FakeAnthropic) -> Iterator[str]:
    """`agentlasso api` pointed at the fake, without a key of its own."""
    env = {
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "",
    }
    with api_process(settings.database_url, settings.redis_url, env) as (url, _pid):
        yield url


@pytest.fixture
def key(api_url: str, api_key: str) -> str:
    """A fresh project's key, the project with its own (fake) Anthropic key."""
    with httpx.Client(base_url=api_url, headers={"x-api-key": api_key}) as client:
        answer = client.patch("/api/v1/judge-settings", json={"anthropic_api_key": FAKE_API_KEY})
        assert answer.status_code == 200, answer.text
    return api_key


@pytest.fixture
def agent() -> Iterator[ConversationAgent]:
    with running_conversation_agent() as server:
        yield server


def persona() -> str:
    return f"A customer ({uuid.uuid4().hex[:10]}) whose order A-17 should be refunded."


def simulated_case(who: str, max_turns: int) -> dict[str, Any]:
    return {
        "description": f"simulated refund, at most {max_turns} simulated turns",
        "conversation": {
            "turns": [{"user": "I want a refund"}],
            "simulated_user": {"persona": who, "goal": "a refund of A-17", "max_turns": max_turns},
        },
        "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
    }


def run_of(api_url: str, key: str, stdout: str) -> dict[str, Any]:
    run_id = stdout.split()[1].rstrip(":")
    with httpx.Client(base_url=api_url, headers={"x-api-key": key}) as client:
        run: dict[str, Any] = client.get(f"/api/v1/eval-runs/{run_id}").json()
    return run


def user_turn_requests(fake: FakeAnthropic, who: str) -> int:
    return sum(1 for r in fake.requests if is_user_turn_request(r) and who in r.prompt_text)


def test_the_simulated_user_is_the_platforms_model_until_its_goal_or_max_turns(
    api_url: str, key: str, fake: FakeAnthropic, agent: ConversationAgent
) -> None:
    ends, runs_out = persona(), persona()
    fake.when(ends, user_goes_on("It is A-17", "Naming the order."),
              user_goes_on("Yes, refund it", "Confirming."), goal_reached("Refunded."))  # fmt: skip
    # Two simulated messages are its limit: the platform says so without asking the model.
    fake.when(runs_out, user_goes_on("It is A-17"), user_goes_on("Yes, refund it"))
    cases = [simulated_case(ends, max_turns=5), simulated_case(runs_out, max_turns=2)]
    dataset, (goal_case, limit_case) = dataset_of(api_url, key, cases)
    done = run_ci(api_url, key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CI gate: PASS" in done.stdout

    played = sorted(
        (r for r in agent.requests if r["test_case_id"] == goal_case), key=lambda r: r["turn"]
    )
    assert [r["input"] for r in played] == ["I want a refund", "It is A-17", "Yes, refund it"]
    assert [len(r["messages"]) for r in played] == [0, 2, 4]
    assert played[2]["messages"][2] == {"role": "user", "content": "It is A-17"}
    assert played[2]["messages"][3]["tool_calls"][0]["name"] == "orders.lookup"
    assert len({r["conversation_id"] for r in played}) == 1

    stored = stored_results(api_url, key, done.stdout)
    for case_id, ended_by in ((goal_case, "simulated_user"), (limit_case, "max_turns")):
        result = stored[case_id]
        assert [(t["user"], t["simulated"]) for t in result["turns"]] == [
            ("I want a refund", False), ("It is A-17", True), ("Yes, refund it", True),
        ]  # fmt: skip
        assert result["ended_by"] == ended_by and result["pass_fail"] is True, result
    # The model was asked three times for one, twice for the other: five calls paid for.
    assert (user_turn_requests(fake, ends), user_turn_requests(fake, runs_out)) == (3, 2)
    judge = run_of(api_url, key, done.stdout)["judge"]
    assert judge["calls"] == 5
    assert judge["input_tokens"] == 5 * USAGE["input_tokens"]
    assert judge["cost_usd"] == pytest.approx(5 * CALL_COST_USD)


def test_a_model_outage_is_waited_out_for_its_retry_after_and_the_conversation_goes_on(
    api_url: str, key: str, fake: FakeAnthropic, agent: ConversationAgent
) -> None:
    who = persona()
    # The platform tries the model three times, then answers 503 with Retry-After: 30; the
    # CLI asks again once that has passed, and the model is back. (An outage past the CLI's
    # 120 s leaves the conversation not graded: tests/e2e/test_ci_conversations.py.)
    fake.when(who, overloaded(), overloaded(), overloaded(), user_goes_on("It is A-17"),
              user_goes_on("Yes, refund it"), goal_reached("Refunded."))  # fmt: skip
    dataset, (case_id,) = dataset_of(api_url, key, [simulated_case(who, max_turns=4)])
    done = run_ci(api_url, key, "--dataset", dataset, "--agent-url", agent.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CI gate: PASS" in done.stdout
    assert user_turn_requests(fake, who) == 6, "three tries in the outage, then three asks"
    stored = stored_results(api_url, key, done.stdout)[case_id]
    assert stored["graded"] is True and stored["pass_fail"] is True, stored
    assert [(t["user"], t["simulated"]) for t in stored["turns"]] == [
        ("I want a refund", False), ("It is A-17", True), ("Yes, refund it", True),
    ]  # fmt: skip
    assert stored["ended_by"] == "simulated_user"
