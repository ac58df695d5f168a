"""The request and reply mapping of the openai_chat and a2a protocols (contract section 14),
branch by branch; the servers' side is tests/integration/test_agent_protocols.py."""

from __future__ import annotations

import json
import os
from typing import Any

import msgspec
import pytest

from agentlasso.agent_wire.a2a import A2aPending, encode_poll, encode_send
from agentlasso.agent_wire.a2a import decode_answer as a2a_decode
from agentlasso.agent_wire.a2a_card import card_prompt_and_tools, card_url, parse_card
from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.agent_wire.openai_chat import decode_answer as chat_decode
from agentlasso.agent_wire.openai_chat import encode_request
from agentlasso.agent_wire.replies import Reply

DEEP = b"[" * 200 + b"]" * 200


def chat(message: Any) -> bytes:
    return json.dumps({"choices": [{"message": message}]}).encode()


def target(**fields: Any) -> AgentTarget:
    return AgentTarget(
        "http://agent.test/v1/chat/completions", {}, 5, protocol="openai_chat", **fields
    )


# openai_chat: the request


def test_a_request_without_model_prompt_context_or_tools_is_the_user_message_alone() -> None:
    sent = json.loads(encode_request(target(), {"input": {"order": 1}, "context": {}}))

    assert sent == {"messages": [{"role": "user", "content": '{"order":1}'}]}


def test_declared_tools_of_every_shape_become_function_tools_and_nameless_ones_are_dropped() -> (
    None
):
    tools = (
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"name": "b", "description": "Bee.", "input_schema": {"type": "object", "title": "B"}},
        {"name": "c"},
        {"description": "no name"},
        "not a tool",
    )
    sent = json.loads(encode_request(target(model="m", tools=tools), {"input": "hi"}))

    assert [tool["function"]["name"] for tool in sent["tools"]] == ["a", "b", "c"]
    assert sent["tools"][1]["function"] == {
        "name": "b",
        "description": "Bee.",
        "parameters": {"type": "object", "title": "B"},
    }
    assert sent["tools"][2]["function"]["parameters"] == {"type": "object"}


def test_only_nameless_tools_send_no_tools_list() -> None:
    sent = json.loads(
        encode_request(target(model="m", tools=({"description": "x"},)), {"input": "hi"})
    )

    assert "tools" not in sent, "OpenAI refuses an empty tools list"


def test_history_is_the_texts_with_an_unknown_role_as_the_user() -> None:
    history = [{"role": "assistant", "content": None}, {"role": "system", "content": "x"}]
    sent = json.loads(encode_request(target(), {"input": "now", "messages": history}))

    assert sent["messages"] == [
        {"role": "assistant", "content": ""}, {"role": "user", "content": "x"},
        {"role": "user", "content": "now"},
    ]  # fmt: skip


# openai_chat: the answer


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", "the agent's answer is not a chat completion: "),
        (DEEP, "the agent's answer is JSON nested too deeply to read"),
        (b'{"choices": [5]}', "the agent's answer's first choice is not a chat message: "),
        (b'{"choices": [{}]}', "the agent's answer's first choice has no message"),
        (chat({"content": 5}), "the agent's answer's message content is not text"),
        (b'{"error": {}}', "the agent's answer is an error: no message"),
        (b'{"choices": null}', "the agent's answer is a chat completion with no choices"),
    ],
)
def test_an_answer_that_is_no_completion_says_why(body: bytes, error: str) -> None:
    answer = chat_decode(body)

    assert isinstance(answer, str) and answer.startswith(error), answer


def test_tool_call_arguments_are_decoded_when_they_are_json() -> None:
    calls = [
        {"function": {"name": "a", "arguments": '{"x": 1}'}},
        {"function": {"name": "b", "arguments": "not json"}},
        {"function": {"name": "c", "arguments": "[" * 200 + "]" * 200}},
        {},
    ]
    answer = chat_decode(chat({"content": None, "tool_calls": calls}))

    assert isinstance(answer, Reply) and answer.output == ""
    assert [call["arguments"] for call in answer.tool_calls] == [
        {"x": 1}, "not json", "[" * 200 + "]" * 200, None,
    ]  # fmt: skip


# a2a


def test_a_message_send_carries_the_case_as_metadata_and_one_context_per_conversation() -> None:
    body = {"input": {"order": 1}, "conversation_id": "conv-1", "turn": 2, "source": "s",
            "run_id": None, "tool_fixtures": {"t": []}}  # fmt: skip
    sent = json.loads(encode_send(body))
    single = json.loads(encode_send({"input": "hi"}))

    message = sent["params"]["message"]
    assert (sent["method"], message["contextId"]) == ("message/send", "conv-1")
    assert message["parts"] == [{"kind": "data", "data": {"order": 1}}]
    assert message["metadata"] == {"source": "s", "turn": 2, "tool_fixtures": {"t": []}}
    assert single["params"]["message"]["contextId"] != "conv-1"
    assert json.loads(encode_poll("task-9"))["params"] == {"id": "task-9"}


def sent_ids(content: bytes) -> tuple[str, str, str]:
    sent = json.loads(content)
    message = sent["params"]["message"]
    return sent["id"], message["messageId"], message["contextId"]


def test_every_request_message_and_single_turn_context_id_is_new() -> None:
    calls = [sent_ids(encode_send({"input": "hi"})) for _ in range(1_000)]

    for kind in zip(*calls, strict=True):  # request ids, message ids, context ids
        assert len(set(kind)) == len(calls)


def test_a_forked_process_does_not_repeat_its_parents_ids() -> None:
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its next ids, written for the parent to compare
        os.write(writer, json.dumps(sent_ids(encode_send({"input": "hi"}))).encode())
        os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    childs = json.loads(os.read(reader, 4096))
    os.close(reader)

    assert not set(childs) & set(sent_ids(encode_send({"input": "hi"})))


def rpc(result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"nope", "the agent's answer is not an A2A JSON-RPC response: "),
        (DEEP, "the agent's answer is JSON nested too deeply to read"),
        (b'{"error": {"code": -32601, "message": "Method not found"}}',
         "the agent's answer is an A2A error (-32601): Method not found"),
        (b'{"jsonrpc": "2.0"}', "the agent's answer is an A2A response with no result"),
        (rpc({"kind": "status-update"}),
         "the agent's answer is an A2A result of kind 'status-update'"),
        (rpc({"kind": "task", "status": {"state": "working"}}),
         "the agent's answer is an A2A task with no id"),
        (rpc({"kind": "task", "id": "t", "status": {"state": "rejected"}}),
         "the agent's A2A task ended rejected"),
    ],
)  # fmt: skip
def test_an_a2a_answer_that_is_no_reply_says_why(body: bytes, error: str) -> None:
    answer = a2a_decode(body)

    assert isinstance(answer, str) and answer.startswith(error), answer


def test_a_task_stopped_for_input_is_the_turns_reply_and_a_working_one_is_pending() -> None:
    said = {"parts": [{"kind": "text", "text": "Which order?"}]}
    asked = a2a_decode(
        rpc({"kind": "task", "id": "t", "status": {"state": "input-required", "message": said}})
    )
    working = a2a_decode(rpc({"kind": "task", "id": "t", "status": {"state": "working"}}))
    done = a2a_decode(
        rpc({"kind": "task", "id": "t", "status": {"state": "completed", "message": said}})
    )

    assert isinstance(asked, Reply) and asked.output == "Which order?"
    assert working == A2aPending("t", "working")
    assert isinstance(done, Reply) and done.output == "Which order?", "no artifacts: the status"
    assert done.tool_calls is msgspec.UNSET


def test_one_tool_call_as_a_data_part_is_reported() -> None:
    parts = [{"kind": "data", "data": {"name": "a", "arguments": {}}}, {"kind": "data", "data": 5}]
    answer = a2a_decode(rpc({"kind": "message", "parts": parts}))

    assert isinstance(answer, Reply) and answer.tool_calls == [{"name": "a", "arguments": {}}]


# the card


def test_the_card_is_at_the_url_or_under_its_well_known_path() -> None:
    assert card_url("https://a.test/agent.json") == "https://a.test/agent.json"
    assert card_url("https://a.test/base/") == "https://a.test/base/.well-known/agent-card.json"


@pytest.mark.parametrize(
    ("card", "error"),
    [
        (b"[", "the agent card is not a JSON object an agent card can be"),
        (DEEP, "the agent card is JSON nested too deeply to read"),
        (b'{"url": "http://a"}', "the agent card has no name"),
        (b'{"name": "a", "url": "http://a", "preferredTransport": "GRPC"}',
         "the agent card names no JSON-RPC endpoint"),
        (b'{"name": "a", "url": "ftp://a"}', "the agent card's endpoint 'ftp://a' is not an http"),
    ],
)  # fmt: skip
def test_a_card_that_cannot_be_used_says_why(card: bytes, error: str) -> None:
    parsed = parse_card(card)

    assert isinstance(parsed, str) and parsed.startswith(error), parsed


def test_a_1_0_card_names_its_endpoint_among_its_interfaces_and_skills_become_a_prompt() -> None:
    card = parse_card(json.dumps({
        "name": "Billing", "description": "Bills.",
        "supportedInterfaces": [{"url": "http://g", "protocolBinding": "GRPC"},
                                {"url": "http://j", "protocolBinding": "JSONRPC"}],
        "skills": [{"id": "refund", "name": "Refund", "description": "Refunds.",
                    "examples": ["Refund 1"]}, "junk", {"id": 5}],
    }).encode())  # fmt: skip

    assert not isinstance(card, str)
    assert card.endpoint == "http://j" and [s.id for s in card.skills] == ["refund"]
    prompt, tools = card_prompt_and_tools(card)
    assert prompt == "You are Billing. Bills.\n- Refund: Refunds. (for example: Refund 1)"
    assert [tool["name"] for tool in tools] == ["refund"]
