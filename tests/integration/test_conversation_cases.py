"""Conversation cases through the API (contract section 13): writing them, importing and
exporting them, the CI case list carrying them, and the results a CI client posts for them."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import httpx
import msgspec

from tests.support.api import create_dataset
from tests.support.assertions import assert_problem

JSONL = {"content-type": "application/x-ndjson"}
REFUND = {
    "description": "refund in three turns",
    "conversation": {
        "turns": [
            {
                "user": "I want a refund",
                "checks": [{"type": "output_contains", "value": "order number"}],
            },
            {"user": "It is A-17", "checks": [{"type": "tool_called", "tool": "orders.lookup"}]},
            {
                "user": "Yes, refund it",
                "checks": [{"type": "tool_called", "tool": "stripe.refund"}],
            },
        ]
    },
    "checks": [{"type": "tool_not_called", "tool": "orders.cancel"}],
}
GOOD_TURNS = [
    {"actual_output": "Sure: what is your order number?", "actual_tool_calls": []},
    {
        "actual_output": "Found A-17. Shall I refund it?",
        "actual_tool_calls": [{"name": "orders.lookup", "arguments": {"order": "A-17"}}],
        "latency_ms": 120,
    },
    {
        "actual_output": "Refunded: 3-5 business days.",
        "actual_tool_calls": [{"name": "stripe.refund", "arguments": {"order": "A-17"}}],
    },
]


async def new_case(client: httpx.AsyncClient, dataset_id: str, body: dict[str, Any]) -> Any:
    return await client.post(f"/api/v1/datasets/{dataset_id}/test-cases", json=body)


async def a_dataset(client: httpx.AsyncClient) -> str:
    return str((await create_dataset(client))["id"])


def turn_check_ids(case: dict[str, Any]) -> list[list[str]]:
    return [[check["id"] for check in turn["checks"]] for turn in case["conversation"]["turns"]]


async def test_a_conversation_case_is_created_with_ids_across_the_whole_case(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await a_dataset(client)
    response = await new_case(client, dataset_id, REFUND)
    assert response.status_code == 201, response.text
    case = response.json()
    assert case["input"] is None and case["revision"] == 1
    # Turns first, then the case's own checks: one numbering for the whole case.
    assert turn_check_ids(case) == [["c1"], ["c2"], ["c3"]]
    assert [check["id"] for check in case["checks"]] == ["c4"]
    read = (await client.get(f"/api/v1/test-cases/{case['id']}")).json()
    assert read["conversation"] == case["conversation"]
    assert read["conversation"]["turns"][1]["user"] == "It is A-17"


async def test_a_case_has_input_or_conversation_never_both_never_neither(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await a_dataset(client)
    both = await new_case(client, dataset_id, {**REFUND, "input": "hello"})
    assert_problem(both, 422, pointer="/conversation")
    neither = await new_case(client, dataset_id, {"checks": REFUND["checks"]})
    assert_problem(neither, 422, pointer="/input")
    empty = await new_case(client, dataset_id, {"conversation": {"turns": []}})
    assert_problem(empty, 422, pointer="/conversation/turns")


async def test_a_check_id_used_twice_across_turns_is_named_where_it_repeats(
    client: httpx.AsyncClient,
) -> None:
    turns = [
        {"user": "one", "checks": [{"id": "same", "type": "output_contains", "value": "a"}]},
        {"user": "two", "checks": [{"type": "output_contains", "value": "b"}]},
        {"user": "three", "checks": [{"id": "same", "type": "output_contains", "value": "c"}]},
    ]
    response = await new_case(client, await a_dataset(client), {"conversation": {"turns": turns}})
    assert_problem(response, 422, pointer="/conversation/turns/2/checks/0/id")


async def test_too_many_turns_or_simulated_turns_are_refused_naming_the_field(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await a_dataset(client)
    many = {"conversation": {"turns": [{"user": f"turn {n}"} for n in range(51)]}}
    assert_problem(await new_case(client, dataset_id, many), 422, pointer="/conversation/turns")
    fifty = {"conversation": {"turns": [{"user": f"turn {n}"} for n in range(50)]}}
    assert (await new_case(client, dataset_id, fifty)).status_code == 201
    for max_turns in (0, 21):
        simulated = {"persona": "a hurried customer", "goal": "a refund", "max_turns": max_turns}
        body = {"conversation": {"simulated_user": simulated, "turns": [{"user": "hi"}]}}
        response = await new_case(client, dataset_id, body)
        assert_problem(response, 422, pointer="/conversation/simulated_user/max_turns")


async def test_an_update_makes_a_new_revision_of_the_conversation(
    client: httpx.AsyncClient,
) -> None:
    case = (await new_case(client, await a_dataset(client), REFUND)).json()
    turns = [*REFUND["conversation"]["turns"], {"user": "Thanks"}]  # type: ignore[index]
    response = await client.patch(
        f"/api/v1/test-cases/{case['id']}", json={"conversation": {"turns": turns}}
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["revision"] == 2
    assert [turn["user"] for turn in updated["conversation"]["turns"]][-1] == "Thanks"
    assert turn_check_ids(updated) == [["c1"], ["c2"], ["c3"], []]
    read = (await client.get(f"/api/v1/test-cases/{case['id']}")).json()
    assert read["revision"] == 2 and len(read["conversation"]["turns"]) == 4


async def test_a_regex_that_does_not_compile_in_a_turn_check_is_a_warning(
    client: httpx.AsyncClient,
) -> None:
    turns = [
        {"user": "one"},
        {"user": "two", "checks": [{"type": "output_contains", "value": "(", "regex": True}]},
    ]
    body = {"conversation": {"turns": turns}, "checks": [{"type": "output_contains", "value": "["}]}
    response = await new_case(client, await a_dataset(client), {**body})
    assert response.status_code == 201, response.text
    warnings = response.json()["warnings"]
    assert [w["pointer"] for w in warnings] == ["/conversation/turns/1/checks/0/value"]
    assert warnings[0]["check_id"] == "c1"


async def test_conversation_cases_export_and_import_back_unchanged(
    client: httpx.AsyncClient,
) -> None:
    simulated = {
        "turns": [],
        "simulated_user": {"persona": "terse", "goal": "cancel order A-9", "opening": "hi"},
    }
    lines = [REFUND, {"conversation": simulated, "checks": [{"type": "tool_called", "tool": "x"}]}]
    source = await a_dataset(client)
    body = b"".join(msgspec.json.encode(line) + b"\n" for line in lines)
    imported = await client.post(
        f"/api/v1/datasets/{source}/test-cases/import", content=body, headers=JSONL
    )
    assert imported.status_code == 201, imported.text
    exported = await client.get(f"/api/v1/datasets/{source}/test-cases/export")
    assert exported.status_code == 200
    copy = await a_dataset(client)
    again = await client.post(
        f"/api/v1/datasets/{copy}/test-cases/import", content=exported.content, headers=JSONL
    )
    assert again.json() == {"imported": 2}
    re_exported = await client.get(f"/api/v1/datasets/{copy}/test-cases/export")
    assert re_exported.content == exported.content
    first, second = (msgspec.json.decode(line) for line in exported.content.splitlines())
    assert [c["id"] for t in first["conversation"]["turns"] for c in t["checks"]] == [
        "c1", "c2", "c3",
    ]  # fmt: skip
    assert second["conversation"]["simulated_user"]["max_turns"] == 6
    bad = b'{"input": "x", "conversation": {"turns": [{"user": "y"}]}}\n'
    refused = await client.post(
        f"/api/v1/datasets/{copy}/test-cases/import", content=bad, headers=JSONL
    )
    body_out = assert_problem(refused, 422)
    assert [(e["line"], e["pointer"]) for e in body_out["errors"]] == [(1, "/conversation")]


async def conversation_run(client: httpx.AsyncClient) -> tuple[dict[str, Any], str, str]:
    """A CI run of a dataset with the refund conversation and a single-turn case: the run,
    the conversation's id and the single-turn case's."""
    dataset_id = await a_dataset(client)
    conversation = (await new_case(client, dataset_id, REFUND)).json()
    single = (await new_case(client, dataset_id, {"input": "hello", "checks": []})).json()
    response = await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})
    assert response.status_code == 201, response.text
    return response.json(), conversation["id"], single["id"]


async def post(client: httpx.AsyncClient, run_id: str, results: list[dict[str, Any]]) -> Any:
    return await client.post(
        "/api/v1/eval-run-results", json={"run_id": run_id, "results": results}
    )


async def results_of(client: httpx.AsyncClient, run_id: str) -> dict[str, dict[str, Any]]:
    page = (await client.get(f"/api/v1/eval-runs/{run_id}/results")).json()
    return {item["test_case_id"]: item for item in page["items"]}


async def test_the_ci_case_list_carries_the_conversation(client: httpx.AsyncClient) -> None:
    run, conversation_id, single_id = await conversation_run(client)
    cases = {case["test_case_id"]: case for case in run["test_cases"]}
    conversation = cases[conversation_id]
    assert conversation["input"] is None
    assert [turn["user"] for turn in conversation["conversation"]["turns"]] == [
        "I want a refund", "It is A-17", "Yes, refund it",
    ]  # fmt: skip
    assert conversation["conversation"]["turns"][2]["checks"][0]["id"] == "c3"
    assert [check["id"] for check in conversation["checks"]] == ["c4"]
    assert "conversation" not in cases[single_id]


async def test_a_posted_conversation_passes_and_reads_back_with_its_turns(
    client: httpx.AsyncClient,
) -> None:
    run, conversation_id, single_id = await conversation_run(client)
    answer = await post(
        client, run["run_id"],
        [{"test_case_id": conversation_id, "turns": GOOD_TURNS},
         {"test_case_id": single_id, "actual_output": "hi"}],
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    graded = {r["test_case_id"]: r for r in answer.json()["results"]}
    assert graded[conversation_id]["pass_fail"] is True, graded[conversation_id]
    turns_of = {c["id"]: c.get("turn") for c in graded[conversation_id]["check_results"]}
    assert turns_of == {"c1": 1, "c2": 2, "c3": 3, "c4": None}
    stored = await results_of(client, run["run_id"])
    result = stored[conversation_id]
    assert result["ended_by"] == "script"
    assert result["turns"][0] == {
        "turn": 1, "user": "I want a refund", "simulated": False,
        "actual_output": "Sure: what is your order number?", "actual_tool_calls": [],
        "latency_ms": None, "error": None,
    }  # fmt: skip
    assert result["turns"][1]["latency_ms"] == 120
    assert result["actual_output"] == "Refunded: 3-5 business days."
    assert [call["name"] for call in result["actual_tool_calls"]] == [
        "orders.lookup", "stripe.refund",
    ]  # fmt: skip
    # Posted once by the client: the conversation's first and only attempt.
    assert result["conversation_attempt"] == 1
    assert "turns" not in stored[single_id] and "ended_by" not in stored[single_id]
    assert "conversation_attempt" not in stored[single_id]


async def test_a_conversation_failing_at_turn_3_names_the_turn(client: httpx.AsyncClient) -> None:
    run, conversation_id, _ = await conversation_run(client)
    turns = [*GOOD_TURNS[:2], {"actual_output": "Done!", "actual_tool_calls": []}]
    answer = await post(client, run["run_id"], [{"test_case_id": conversation_id, "turns": turns}])
    assert answer.status_code == 200, answer.text
    result = answer.json()["results"][0]
    assert result["pass_fail"] is False
    assert "turn 3: c3 tool_called" in result["judge_reasoning"], result["judge_reasoning"]
    failed = [c for c in result["check_results"] if c["status"] == "failed"]
    assert [(c["id"], c["turn"]) for c in failed] == [("c3", 3)]


async def test_an_agent_error_at_turn_2_stops_the_conversation(client: httpx.AsyncClient) -> None:
    run, conversation_id, _ = await conversation_run(client)
    turns = [GOOD_TURNS[0], {"error": "the agent answered HTTP 503", "latency_ms": 30}]
    answer = await post(client, run["run_id"], [{"test_case_id": conversation_id, "turns": turns}])
    assert answer.status_code == 200, answer.text
    result = answer.json()["results"][0]
    assert result["pass_fail"] is False
    status = {c["id"]: c["status"] for c in result["check_results"]}
    assert status == {"c1": "passed", "c2": "failed", "c3": "failed", "c4": "failed"}
    stopped = "The conversation stopped at turn 2: the agent answered HTTP 503."
    details = {c["id"]: c["detail"] for c in result["check_results"]}
    assert details["c2"] == stopped and details["c4"] == stopped
    stored = (await results_of(client, run["run_id"]))[conversation_id]
    assert stored["ended_by"] == "error"
    assert stored["turns"][1]["error"] == "the agent answered HTTP 503"
    gate = (await client.get(f"/api/v1/eval-runs/{run['run_id']}")).json()
    assert gate["counts"]["errored"] == 1


async def test_posting_a_conversation_again_replaces_its_result(client: httpx.AsyncClient) -> None:
    run, conversation_id, _ = await conversation_run(client)
    bad = [*GOOD_TURNS[:2], {"actual_output": "Done!", "actual_tool_calls": []}]
    first = await post(client, run["run_id"], [{"test_case_id": conversation_id, "turns": bad}])
    assert first.json()["results"][0]["pass_fail"] is False
    again = await post(
        client, run["run_id"], [{"test_case_id": conversation_id, "turns": GOOD_TURNS}]
    )
    assert again.json()["results"][0]["pass_fail"] is True
    assert again.json()["counts"]["passed"] == 1 and again.json()["counts"]["failed"] == 0
    stored = (await results_of(client, run["run_id"]))[conversation_id]
    assert stored["pass_fail"] is True and stored["turns"][2]["actual_output"].startswith("Ref")


async def test_turns_are_only_for_conversations_and_required_for_them(
    client: httpx.AsyncClient,
) -> None:
    run, conversation_id, single_id = await conversation_run(client)
    run_id = run["run_id"]
    no_turns = await post(client, run_id, [{"test_case_id": conversation_id, "actual_output": "x"}])
    body = assert_problem(no_turns, 422, pointer="/results/0/turns")
    assert "/results/0/actual_output" in [e["pointer"] for e in body["errors"]]
    single = await post(client, run_id, [{"test_case_id": single_id, "turns": GOOD_TURNS}])
    assert_problem(single, 422, pointer="/results/0/turns")
    empty = await post(client, run_id, [{"test_case_id": conversation_id, "turns": []}])
    assert_problem(empty, 422, pointer="/results/0/turns")
    past_script = [*GOOD_TURNS, {"actual_output": "more"}]
    too_many = await post(client, run_id, [{"test_case_id": conversation_id, "turns": past_script}])
    assert_problem(too_many, 422, pointer="/results/0/turns")
    after_error = [{"error": "boom"}, GOOD_TURNS[1]]
    stopped = await post(client, run_id, [{"test_case_id": conversation_id, "turns": after_error}])
    assert_problem(stopped, 422, pointer="/results/0/turns/1")
    unknown = await post(
        client, run_id, [{"test_case_id": conversation_id, "turns": [{"output": "x"}]}]
    )
    assert_problem(unknown, 422, pointer="/results/0/turns/0/output")
    not_a_trace = [{**GOOD_TURNS[0], "agent_trace_id": "not-a-trace"}, *GOOD_TURNS[1:]]
    bad_trace = await post(
        client, run_id, [{"test_case_id": conversation_id, "turns": not_a_trace}]
    )
    assert_problem(bad_trace, 422, pointer="/results/0/turns/0/agent_trace_id")
    # Nothing was stored by the refused posts.
    assert await results_of(client, run_id) == {}


async def test_turns_past_the_script_need_their_user_and_are_simulated(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await a_dataset(client)
    conversation = {
        "turns": [{"user": "I want a refund"}],
        "simulated_user": {"persona": "a customer", "goal": "a refund of A-17", "max_turns": 2},
    }
    checks = [{"type": "tool_called", "tool": "stripe.refund"}]
    case = await new_case(client, dataset_id, {"conversation": conversation, "checks": checks})
    case_id = case.json()["id"]
    run = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})).json()
    turns = [{"actual_output": "Order number?", "actual_tool_calls": []}, {"actual_output": "ok"}]
    missing_user = await post(client, run["run_id"], [{"test_case_id": case_id, "turns": turns}])
    assert_problem(missing_user, 422, pointer="/results/0/turns/1/user")
    turns[1] = {
        "user": "A-17, please",
        "actual_output": "Refunded.",
        "actual_tool_calls": [{"name": "stripe.refund"}],
    }
    answer = await post(client, run["run_id"], [{"test_case_id": case_id, "turns": turns}])
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["pass_fail"] is True
    stored = (await results_of(client, run["run_id"]))[case_id]
    assert [(t["user"], t["simulated"]) for t in stored["turns"]] == [
        ("I want a refund", False), ("A-17, please", True),
    ]  # fmt: skip
    # The simulated user had a turn left and the client did not say: it ended the conversation.
    assert stored["ended_by"] == "simulated_user"


def pointers(body: dict[str, Any]) -> list[str]:
    return [error["pointer"] for error in body["errors"]]


async def test_an_ended_by_the_turns_contradict_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    run, scripted_id, _ = await conversation_run(client)
    run_id = run["run_id"]
    # Three scripted turns and no simulated user.
    refused = [
        (GOOD_TURNS[:1], "script", "1 of the script's 3 turns were posted"),
        (GOOD_TURNS, "simulated_user", "no simulated user"),
        (GOOD_TURNS, "max_turns", "no simulated user"),
        (GOOD_TURNS, "error", "No turn's agent call failed"),
    ]
    for turns, ended_by, says in refused:
        posted = {"test_case_id": scripted_id, "turns": turns, "ended_by": ended_by}
        body = assert_problem(await post(client, run_id, [posted]), 422)
        assert pointers(body) == ["/results/0/ended_by"], (ended_by, body)
        assert says in body["errors"][0]["detail"], body
    assert await results_of(client, run_id) == {}
    # The agent may end a conversation at any turn.
    ended = {"test_case_id": scripted_id, "turns": GOOD_TURNS[:1], "ended_by": "agent"}
    answer = await post(client, run_id, [ended])
    assert answer.status_code == 200, answer.text
    assert (await results_of(client, run_id))[scripted_id]["ended_by"] == "agent"
    # A client that could not play the conversation out says why: `error` needs no failed turn.
    unplayed = {
        "test_case_id": scripted_id, "turns": GOOD_TURNS[:1], "ended_by": "error",
        "agent_error": "the agent process could not be started again",
    }  # fmt: skip
    answer = await post(client, run_id, [unplayed])
    assert answer.status_code == 200, answer.text
    stored = (await results_of(client, run_id))[scripted_id]
    # Its critical checks could not be graded: never passed, and counted as failed.
    assert stored["ended_by"] == "error" and stored["outcome"] == "failed"
    assert {c["status"] for c in stored["check_results"]} == {"not_graded"}


async def test_ended_by_a_simulated_user_needs_the_whole_script_and_max_turns_its_limit(
    client: httpx.AsyncClient,
) -> None:
    dataset_id = await a_dataset(client)
    conversation = {
        "turns": [{"user": "I want a refund"}, {"user": "It is A-17"}],
        "simulated_user": {"persona": "a customer", "goal": "a refund of A-17", "max_turns": 2},
    }
    checks = [{"type": "tool_called", "tool": "orders.lookup"}]
    case = await new_case(client, dataset_id, {"conversation": conversation, "checks": checks})
    case_id = case.json()["id"]
    run_id = (await client.post("/api/v1/eval-runs", json={"dataset_id": dataset_id})).json()[
        "run_id"
    ]
    script = GOOD_TURNS[:2]
    simulated = [{"user": "Yes, refund it", "actual_output": "Refunded."}, {"user": "Thanks"}]
    refused = [
        (script, "script", "plays on after the script"),
        (script[:1], "simulated_user", "1 of the script's 2 turns were posted"),
        (script[:1], "max_turns", "1 of the script's 2 turns were posted"),
        ([*script, simulated[0]], "max_turns", "wrote 1 of its 2 messages"),
    ]
    for turns, ended_by, says in refused:
        posted = {"test_case_id": case_id, "turns": turns, "ended_by": ended_by}
        body = assert_problem(await post(client, run_id, [posted]), 422)
        assert pointers(body) == ["/results/0/ended_by"], (ended_by, body)
        assert says in body["errors"][0]["detail"], body
    assert await results_of(client, run_id) == {}
    for turns, ended_by in (
        (script, "simulated_user"),  # done before writing a message
        ([*script, *simulated], "max_turns"),
    ):
        posted = {"test_case_id": case_id, "turns": turns, "ended_by": ended_by}
        answer = await post(client, run_id, [posted])
        assert answer.status_code == 200, answer.text
        stored = (await results_of(client, run_id))[case_id]
        assert stored["ended_by"] == ended_by and len(stored["turns"]) == len(turns)


async def test_a_scripted_turn_posted_with_another_user_message_is_refused(
    client: httpx.AsyncClient,
) -> None:
    run, conversation_id, _ = await conversation_run(client)
    run_id = run["run_id"]
    other = [GOOD_TURNS[0], {**GOOD_TURNS[1], "user": "It is B-9"}, GOOD_TURNS[2]]
    body = assert_problem(
        await post(client, run_id, [{"test_case_id": conversation_id, "turns": other}]), 422
    )
    assert pointers(body) == ["/results/0/turns/1/user"]
    assert await results_of(client, run_id) == {}
    # The script's own message may be posted with its turn.
    same = [GOOD_TURNS[0], {**GOOD_TURNS[1], "user": "It is A-17"}, GOOD_TURNS[2]]
    answer = await post(client, run_id, [{"test_case_id": conversation_id, "turns": same}])
    assert answer.status_code == 200, answer.text
    stored = (await results_of(client, run_id))[conversation_id]
    assert [(t["user"], t["simulated"]) for t in stored["turns"]][1] == ("It is A-17", False)


async def test_a_replayed_conversation_reads_back_with_its_attempt(
    client: httpx.AsyncClient, database_url: str
) -> None:
    run, conversation_id, _ = await conversation_run(client)
    posted = await post(
        client, run["run_id"], [{"test_case_id": conversation_id, "turns": GOOD_TURNS}]
    )
    assert posted.status_code == 200, posted.text
    # As a server-mode worker stores it after two attempts were lost to stopped workers.
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE case_results SET conversation_attempt = 3"
            " WHERE run_id = $1 AND test_case_id = $2",
            uuid.UUID(run["run_id"]), uuid.UUID(conversation_id),
        )  # fmt: skip
    finally:
        await connection.close()
    stored = (await results_of(client, run["run_id"]))[conversation_id]
    assert stored["conversation_attempt"] == 3 and stored["ended_by"] == "script"
