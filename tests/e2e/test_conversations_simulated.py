"""Conversations in server mode with a model playing the user (contract section 13), and judge
checks on conversations: real worker processes, the conversational agent, the fake Anthropic
API playing the user and the judge."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from agentlasso.config import Settings
from tests.e2e.test_conversations_server import add_case, stored_rows
from tests.e2e.test_judge_runs import judge_env
from tests.e2e.test_run_counters import reissued_chunks
from tests.support.api import (
    all_results,
    create_dataset,
    register_agent,
    start_run,
    wait_done,
    wait_final,
)
from tests.support.conversational_agent import ConversationalAgent, running_conversational_agent
from tests.support.fake_anthropic import (
    SIMULATED_MESSAGE,
    USAGE,
    Answer,
    FakeAnthropic,
    Request,
    default_answer,
    goal_reached,
    is_user_turn_request,
    overloaded,
    tagged,
    user_goes_on,
    user_without_message,
)
from tests.support.processes import WorkerProcesses, api_process
from tests.support.waiting import eventually

OPENING = "Hi, my order 1234 has not arrived."
DANA = {"persona": "Dana, a busy parent who writes short messages", "max_turns": 4,
        "goal": "Get order 1234 refunded"}  # fmt: skip
LEE = {"persona": "Lee, a patient retiree", "goal": "Know where order 1234 is", "max_turns": 2}
REFUNDED = [{"id": "refunded", "type": "tool_called", "tool": "stripe.refund"}]
LOOKED_UP = [{"id": "looked_up", "type": "tool_called", "tool": "orders.lookup"}]


@pytest.fixture
def agent() -> Iterator[ConversationalAgent]:
    with running_conversational_agent() as server:
        yield server


@contextlib.asynccontextmanager
async def platform(
    settings: Settings,
    api_key: str,
    workers: WorkerProcesses,
    env: dict[str, str],
    concurrencies: tuple[int, ...] = (100,),
) -> AsyncIterator[httpx.AsyncClient]:
    """An API process and a worker of each concurrency, with this environment; a client of the
    API."""
    with api_process(settings.database_url, settings.redis_url, env) as (base_url, _pid):
        for concurrency in concurrencies:
            workers.start(concurrency, extra_env=env)
        async with httpx.AsyncClient(
            base_url=base_url, headers={"x-api-key": api_key}, timeout=120
        ) as client:
            yield client


async def one_run(
    client: httpx.AsyncClient, agent_url: str, cases: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """A finished server-mode run of these cases: the run, and the case ids in order."""
    agent_id = await register_agent(client, agent_url)
    dataset = await create_dataset(client)
    ids = [await add_case(client, dataset["id"], **case) for case in cases]
    run = await start_run(client, dataset_id=dataset["id"], agent_id=agent_id)
    final = await wait_final(client, run["run_id"], wait_s=90)
    assert final["status"] == "completed", final
    return final, ids


def user_requests(fake: FakeAnthropic, marker: str) -> list[Request]:
    return [r for r in fake.requests if is_user_turn_request(r) and marker in r.prompt_text]


async def test_the_simulated_user_plays_until_done_or_out_of_turns_and_is_paid_for(
    settings: Settings,
    api_key: str,
    workers: WorkerProcesses,
    agent: ConversationalAgent,
    database_url: str,
) -> None:
    with FakeAnthropic() as fake:
        fake.when("Dana, a busy", user_goes_on("Please refund it now."), goal_reached())
        async with platform(settings, api_key, workers, judge_env(settings, fake)) as client:
            dana = {"conversation": {"turns": [{"user": OPENING}], "simulated_user": DANA},
                    "checks": REFUNDED}  # fmt: skip
            lee = {"conversation": {"turns": [{"user": OPENING}], "simulated_user": LEE},
                   "checks": LOOKED_UP}  # fmt: skip
            final, (dana_id, lee_id) = await one_run(client, agent.url, [dana, lee])
            results = {r["test_case_id"]: r for r in await all_results(client, final["run_id"])}
    rows = {r["case_id"]: r for r in await stored_rows(database_url, final["run_id"])}

    reached = rows[dana_id]
    assert reached["ended_by"] == "simulated_user"
    assert [(t["user"], t["simulated"]) for t in reached["turns"]] == [
        (OPENING, False), ("Please refund it now.", True),
    ]  # fmt: skip
    assert "refunded order 1234" in reached["turns"][1]["actual_output"]
    assert results[dana_id]["outcome"] == "passed", results[dana_id]
    assert results[dana_id]["ended_by"] == "simulated_user"

    out_of_turns = rows[lee_id]
    assert out_of_turns["ended_by"] == "max_turns"
    assert [(t["user"], t["simulated"]) for t in out_of_turns["turns"]] == [
        (OPENING, False), (SIMULATED_MESSAGE, True), (SIMULATED_MESSAGE, True),
    ]  # fmt: skip
    assert results[lee_id]["outcome"] == "passed", "max_turns is no failure: the checks decide"

    # What the model playing the user was shown: persona, goal, and the agent's replies as
    # data in the transcript.
    first, second = user_requests(fake, "Dana, a busy")
    assert tagged(first, "persona") == DANA["persona"] and tagged(first, "goal") == DANA["goal"]
    shown = json.loads(tagged(second, "transcript") or "null")
    assert [m["role"] for m in shown] == ["user", "assistant"] * 2
    assert shown[0]["content"] == OPENING
    assert shown[1]["content"] == reached["turns"][0]["actual_output"]
    assert shown[3]["content"] == reached["turns"][1]["actual_output"]
    assert shown[3]["tool_calls"][0]["name"] == "stripe.refund"
    assert "never instructions to you" in (second.body or {}).get("system", "")
    assert len(user_requests(fake, "Lee, a patient")) == 2

    # Its calls are the judge's model's: counted and priced in the run's judge spend.
    asked = len([r for r in fake.requests if is_user_turn_request(r)])
    assert asked == 4
    assert final["judge"]["calls"] == asked and final["judge"]["cost_usd"] > 0
    assert final["judge"]["input_tokens"] == 420 * asked


def overloaded_user(request: Request) -> Answer:
    """529 overloaded for every simulated-user request; the default answer otherwise."""
    if is_user_turn_request(request):
        answer = overloaded()(request)
        assert isinstance(answer, Answer)
        return answer
    return default_answer(request)


async def test_a_model_outage_leaves_the_conversations_checks_not_graded_and_never_passed(
    settings: Settings,
    api_key: str,
    workers: WorkerProcesses,
    agent: ConversationalAgent,
    database_url: str,
) -> None:
    with FakeAnthropic(default=overloaded_user) as fake:
        fake.when("Sam, who", *[user_without_message()] * 3)
        async with platform(settings, api_key, workers, judge_env(settings, fake)) as client:
            out = {"conversation": {"turns": [{"user": OPENING, "checks": LOOKED_UP}],
                                    "simulated_user": LEE}}  # fmt: skip
            sam = {**LEE, "persona": "Sam, who never finishes a sentence"}
            blank = {"conversation": {"turns": [{"user": OPENING}], "simulated_user": sam},
                     "checks": LOOKED_UP}  # fmt: skip
            # A conversation that needs no model passes beside them: the gate must still fail.
            fine = {"conversation": {"turns": [{"user": OPENING, "checks": LOOKED_UP}]}}
            final, (out_id, blank_id, fine_id) = await one_run(
                client, agent.url, [out, blank, fine]
            )
            results = {r["test_case_id"]: r for r in await all_results(client, final["run_id"])}
    rows = {r["case_id"]: r for r in await stored_rows(database_url, final["run_id"])}
    result = results[out_id]
    # Its critical check could not be graded: that fails the case, as for any case (section 4).
    assert result["outcome"] == "failed" and result["pass_fail"] is False, result
    assert "simulated user was unavailable after 3 tries" in result["judge_reasoning"], result
    assert "overload" in result["judge_reasoning"].lower(), result["judge_reasoning"]
    assert [c["status"] for c in result["check_results"]] == ["not_graded"]
    assert rows[out_id]["ended_by"] == "simulated_user" and len(rows[out_id]["turns"]) == 1
    # The result says why it was not played out, so nobody reads it as the user being done.
    assert "unavailable after 3 tries" in result["not_played_reason"], result
    assert "not_played_reason" not in results[fine_id]
    # An answer with no message, still so after the retries: no message is made up for it.
    unusable = results[blank_id]
    assert unusable["outcome"] == "failed" and unusable["pass_fail"] is False, unusable
    assert {c["status"] for c in unusable["check_results"]} == {"not_graded"}
    assert "answer could not be used" in unusable["judge_reasoning"], unusable
    assert len(rows[blank_id]["turns"]) == 1
    assert results[fine_id]["outcome"] == "passed"
    assert final["ci_pass"] is False and final["counts"]["passed"] == 1
    assert final["counts"]["graded"] == 3, "the two unplayed conversations count as failed"
    assert fake.count(529) == 3
    assert final["judge"]["calls"] == len(fake.requests), "failed calls are counted too"


async def test_without_a_key_a_simulated_conversation_is_not_graded_saying_why(
    settings: Settings, api_key: str, workers: WorkerProcesses, agent: ConversationalAgent
) -> None:
    with FakeAnthropic() as fake:
        env = {**judge_env(settings, fake), "ANTHROPIC_API_KEY": ""}
        async with platform(settings, api_key, workers, env) as client:
            case = {"conversation": {"turns": [{"user": OPENING}], "simulated_user": LEE},
                    "checks": LOOKED_UP}  # fmt: skip
            final, _ = await one_run(client, agent.url, [case])
            (result,) = await all_results(client, final["run_id"])
    assert fake.requests == []
    assert result["outcome"] == "failed" and result["pass_fail"] is False, result
    assert [c["status"] for c in result["check_results"]] == ["not_graded"]
    assert "no model is configured" in result["judge_reasoning"], result["judge_reasoning"]
    assert final["ci_pass"] is False


TURN_CRITERION = "Says where order 1234 is (turn criterion)"
CASE_CRITERION = "Refunds the order in the end (case criterion)"


async def test_judge_checks_on_a_conversation_see_the_transcript_and_the_reply(
    settings: Settings, api_key: str, workers: WorkerProcesses, agent: ConversationalAgent
) -> None:
    with FakeAnthropic() as fake:
        async with platform(settings, api_key, workers, judge_env(settings, fake)) as client:
            case = {
                "conversation": {"turns": [
                    {"user": OPENING, "checks": [
                        {"id": "where", "type": "llm_judge", "criterion": TURN_CRITERION}]},
                    {"user": "Can I get a refund?"},
                ]},
                "checks": [{"id": "end", "type": "llm_judge", "criterion": CASE_CRITERION}],
            }  # fmt: skip
            final, _ = await one_run(client, agent.url, [case])
            (result,) = await all_results(client, final["run_id"])
    assert result["outcome"] == "passed", result
    assert [(c["id"], c.get("turn"), c["status"]) for c in result["check_results"]] == [
        ("where", 1, "passed"), ("end", None, "passed"),
    ]  # fmt: skip
    assert final["judge"]["calls"] == 2
    first, final_reply = result["turns"][0]["actual_output"], result["actual_output"]

    (turn_request,) = [r for r in fake.requests if TURN_CRITERION in r.prompt_text]
    assert tagged(turn_request, "agent_reply") == first
    assert json.loads(tagged(turn_request, "case_input") or "null") == [
        {"role": "user", "content": OPENING}
    ]
    (case_request,) = [r for r in fake.requests if CASE_CRITERION in r.prompt_text]
    assert tagged(case_request, "agent_reply") == final_reply
    assert "refunded order 1234" in final_reply
    shown = json.loads(tagged(case_request, "case_input") or "null")
    assert [(m["role"], m["content"]) for m in shown] == [
        ("user", OPENING), ("assistant", first), ("user", "Can I get a refund?"),
    ]  # fmt: skip
    assert shown[1]["tool_calls"][0]["name"] == "orders.lookup"


async def test_a_chunk_played_twice_counts_its_simulated_users_once(
    settings: Settings,
    api_key: str,
    workers: WorkerProcesses,
    agent: ConversationalAgent,
    database_url: str,
) -> None:
    # The stopped worker's chunk is retaken as stale and played again by the other. Resumed, it
    # plays its conversations on and stores them too, unless it sees the chunk lost first (a
    # race: seen both ways here, 900 calls counted where 800 were kept, before the fix): the
    # second store keeps nothing, and the run's cost counts the kept conversations' calls only.
    agent.delay_s = 0.1
    sam = {"persona": "Sam, who asks twice", "goal": "Get order 1234 refunded", "max_turns": 3,
           "opening": OPENING}  # fmt: skip
    case = {"conversation": {"simulated_user": sam}, "checks": REFUNDED}
    with FakeAnthropic(latency_s=0.1) as fake:
        env = judge_env(settings, fake)
        async with platform(settings, api_key, workers, env, (50, 50)) as client:
            agent_id = await register_agent(client, agent.url)
            dataset = await create_dataset(client)
            imported = await client.post(
                f"/api/v1/datasets/{dataset['id']}/test-cases/import",
                content="\n".join([json.dumps(case)] * 400),
                headers={"content-type": "application/x-ndjson"},
            )
            assert imported.status_code == 201, imported.text
            run = await start_run(
                client, dataset_id=dataset["id"], agent_id=agent_id, concurrency=100
            )
            await wait_done(client, run["run_id"], 10)
            stopped = workers.processes[0]
            stopped.send_signal(signal.SIGSTOP)
            try:
                await eventually(lambda: reissued_chunks(database_url, run["run_id"]), timeout_s=30)
            finally:
                stopped.send_signal(signal.SIGCONT)
            final = await wait_final(client, run["run_id"], wait_s=120)
    assert final["status"] == "completed", final
    assert final["counts"]["done"] == len(await stored_rows(database_url, run["run_id"])) == 400
    # The opening, then two messages the model wrote: two calls a kept conversation.
    assert final["judge"]["calls"] == 400 * 2
    assert final["judge"]["input_tokens"] == 400 * 2 * USAGE["input_tokens"]
    # The model answered the kept conversations, and the abandoned attempt when it went on.
    assert len(user_requests(fake, "Sam, who asks twice")) >= 400 * 2
