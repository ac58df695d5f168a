"""`agentlasso ci --agent-protocol`: the CI machine calling an agent that speaks OpenAI's chat
completions or A2A (contract section 14), with the request and reply mapping server mode uses
(agentlasso.agent_wire), and a W3C `traceparent` on every call.

Like HttpAgent, this calls the user's own agent from the user's own CI: no address guard.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import msgspec

from agentlasso.agent_wire.a2a import A2aPending
from agentlasso.agent_wire.a2a_card import card_url, parse_card
from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.agent_wire.protocols import decode_answer, encode_poll, encode_request
from agentlasso.cli.local_agents import AgentAnswer
from agentlasso.domain.trace_context import new_traceparent

# How often an A2A task still running is asked about.
_POLL_S = 0.5


class ProtocolAgent:
    """POSTs each request in the agent's protocol, and reads its answer back as a reply."""

    def __init__(self, http: httpx.AsyncClient, target: AgentTarget) -> None:
        self.http, self.target = http, target
        self._endpoint: str | None = None if target.protocol == "a2a" else target.url

    async def exchange(self, body: dict[str, Any]) -> AgentAnswer:
        """One call (an A2A task followed to its end): the reply, or why there is none."""
        started = time.monotonic()
        trace_id, traceparent = new_traceparent()
        timeout_s = self.target.timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                answer = await self._call(body, traceparent.decode())
        except TimeoutError:
            answer = AgentAnswer(error=f"the agent call timed out after {timeout_s:g} s")
        except httpx.HTTPError as exc:
            answer = AgentAnswer(error=f"the agent call failed: {type(exc).__name__} {exc}")
        latency_ms = round((time.monotonic() - started) * 1000)
        return msgspec.structs.replace(answer, latency_ms=latency_ms, trace_id=trace_id)

    async def _call(self, body: dict[str, Any], traceparent: str) -> AgentAnswer:
        endpoint = self._endpoint or await self._a2a_endpoint()
        headers = {"traceparent": traceparent, "content-type": "application/json"}
        content = encode_request(self.target, body)
        while True:
            response = await self.http.post(endpoint, content=content, headers=headers)
            if not response.is_success:
                return AgentAnswer(error=f"the agent answered HTTP {response.status_code}")
            reply = decode_answer(self.target.protocol, response.content)
            if isinstance(reply, str):
                return AgentAnswer(error=reply)
            if not isinstance(reply, A2aPending):
                return AgentAnswer(reply=_as_answer(reply.output, reply.tool_calls))
            await asyncio.sleep(_POLL_S)
            content = encode_poll(reply)

    async def _a2a_endpoint(self) -> str:
        """The JSON-RPC endpoint the agent's card names, read once."""
        where = card_url(self.target.url)
        response = await self.http.get(where)
        card = parse_card(response.content) if response.is_success else "it could not be read"
        if isinstance(card, str):
            raise httpx.HTTPError(f"the agent card at {where}: {card}")
        self._endpoint = card.endpoint
        return card.endpoint


def _as_answer(output: Any, tool_calls: Any) -> dict[str, Any]:
    """A reply as section 3's answer object (a key left out where it was not reported)."""
    answer: dict[str, Any] = {}
    if output is not msgspec.UNSET:
        answer["output"] = output
    if tool_calls is not msgspec.UNSET:
        answer["tool_calls"] = tool_calls
    return answer
