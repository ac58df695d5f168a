"""A three-turn conversation as OTLP spans: a trace per turn, each naming the conversation
(`gen_ai.conversation.id`, or another key such as `session.id`), its model sent the history."""

from __future__ import annotations

import json
from typing import Any

from tests.support.otlp import SpanSpec, new_span_id, new_trace_id

TURN_MS = 60_000
USERS = (
    "Hi, my order number is 4417. Where is it?",
    "Please send it to 5 Elm Street instead.",
    "Thanks, that is all.",
)
REPLIES = (
    "Order 4417 is on its way and arrives on Friday.",
    "Done: order 4417 now goes to 5 Elm Street.",
    "You are welcome, goodbye!",
)
# The tools the agent called in each turn, in order.
TOOLS = (("lookup_order",), ("lookup_order", "update_address"), ())


def parts(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def turn_trace(
    number: int, conversation_id: str, key: str = "gen_ai.conversation.id"
) -> list[SpanSpec]:
    """Turn `number` (1-based) of the conversation as one trace in the GenAI conventions: an
    agent span naming the conversation, a model call sent the history so far, a tool span per
    call, and the reply."""
    index = number - 1
    trace_id, root, chat = new_trace_id(), new_span_id(), new_span_id()
    start = index * TURN_MS
    history = []
    for earlier in range(index):
        history += [parts("user", USERS[earlier]), parts("assistant", REPLIES[earlier])]
    history.append(parts("user", USERS[index]))
    spans = [
        SpanSpec(trace_id, root, "invoke_agent shop-bot", start, start + 900,
                 attributes={"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "shop-bot", key: conversation_id}),
        SpanSpec(trace_id, chat, "chat gpt-5-mini", start + 700, start + 880, root,
                 attributes={"gen_ai.operation.name": "chat",
                             "gen_ai.request.model": "gpt-5-mini",
                             "gen_ai.input.messages": json.dumps(history),
                             "gen_ai.output.messages": json.dumps(
                                 [parts("assistant", REPLIES[index])])}),
    ]  # fmt: skip
    for offset, tool in enumerate(TOOLS[index]):
        spans.append(
            SpanSpec(trace_id, new_span_id(), f"execute_tool {tool}", start + 100 + offset * 100,
                     start + 150 + offset * 100, root,
                     attributes={"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": tool,
                                 "gen_ai.tool.call.arguments": '{"order_id": "4417"}'})
        )  # fmt: skip
    return spans


def three_turns(conversation_id: str, key: str = "gen_ai.conversation.id") -> list[list[SpanSpec]]:
    return [turn_trace(number, conversation_id, key) for number in (1, 2, 3)]
