"""The protocols an agent may speak (contract section 14), each mapped to one request body and
one `{output, tool_calls}` reply: `agentlasso` (section 3's JSON), `openai_chat` (an
OpenAI-compatible chat completion) and `a2a` (Agent2Agent's JSON-RPC `message/send`).

The platform's own request body is built once per call whatever the protocol; this module turns
it into the bytes the agent's protocol expects and reads the answer back, so the client's
timeouts, retries, caps and address guard are the same for every protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

from agentlasso.agent_wire import a2a, openai_chat
from agentlasso.agent_wire.a2a import A2aPending
from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.agent_wire.replies import Reply, parse_reply

Protocol = Literal["agentlasso", "openai_chat", "a2a"]
PROTOCOLS: Final[tuple[Protocol, ...]] = ("agentlasso", "openai_chat", "a2a")
DEFAULT_PROTOCOL: Final[Protocol] = "agentlasso"
# What each protocol is called where a person reads it.
PROTOCOL_LABELS: Final[dict[str, str]] = {
    "agentlasso": "AgentLasso JSON",
    "openai_chat": "OpenAI-compatible chat completions",
    "a2a": "Agent2Agent (A2A)",
}


def encode_request(target: AgentTarget, body: Mapping[str, Any]) -> bytes:
    """The request content for the agent's protocol, from the platform's own request body."""
    if target.protocol == "openai_chat":
        return openai_chat.encode_request(target, body)
    if target.protocol == "a2a":
        return a2a.encode_send(body)
    return msgspec.json.encode(body)


def decode_answer(protocol: str, content: bytes) -> Reply | A2aPending | str:
    """The reply in a 2xx answer's body; an A2A task still running; or why it is neither."""
    if protocol == "openai_chat":
        return openai_chat.decode_answer(content)
    if protocol == "a2a":
        return a2a.decode_answer(content)
    return parse_reply(content)


def encode_poll(pending: A2aPending) -> bytes:
    """The request that asks an A2A agent how its task is going (`tasks/get`)."""
    return a2a.encode_poll(pending.task_id)
