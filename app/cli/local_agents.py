"""Calling the agent from the CI machine (`agentlasso ci`): an HTTP endpoint or a command.

This runs on the user's own CI, calling the user's own agent, so it has no address guard; the
platform's outbound calls (server mode) are another module.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Protocol

import httpx
import msgspec

from agentlasso.client import ResultToPost, RunTestCase
from agentlasso.domain.trace_context import new_traceparent

MAX_REPLY_BYTES = 16 * 1024 * 1024


class AgentAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One call to the agent: its JSON answer (an object), or why there is none."""

    reply: dict[str, Any] | None = None
    error: str | None = None
    latency_ms: int | None = None
    # The W3C trace id the call's traceparent carried (an HTTP call's; section 14).
    trace_id: str | None = None


class AgentCaller(Protocol):
    """Something that sends the agent one request body and reads its answer."""

    async def exchange(self, body: dict[str, Any]) -> AgentAnswer: ...


def request_body(run_id: str, case: RunTestCase) -> dict[str, Any]:
    """What the agent receives: the input, where it comes from, the case and run, the context,
    and the case's tool fixtures when it has some."""
    body = {
        "input": case.input,
        "source": "agentlasso-test",
        "test_case_id": case.test_case_id,
        "run_id": run_id,
        "trial": 1,
        "context": case.data_context or {},
    }
    if case.tool_fixtures is not msgspec.UNSET:
        body["tool_fixtures"] = case.tool_fixtures
    return body


def read_reply(raw: bytes) -> AgentAnswer:
    """The agent's JSON answer; an unreadable one is the call's failure."""
    try:
        reply = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        return AgentAnswer(error=f"the agent's answer is not JSON ({exc})")
    if not isinstance(reply, dict):
        return AgentAnswer(error="the agent's answer is not a JSON object")
    return AgentAnswer(reply=reply)


async def call_once(agent: AgentCaller, run_id: str, case: RunTestCase) -> ResultToPost:
    """A single-turn case: one call, its answer as the result."""
    answer = await agent.exchange(request_body(run_id, case))
    if answer.reply is None:
        return failed(case.test_case_id, answer.error or "the agent call failed")
    return ResultToPost(
        test_case_id=case.test_case_id,
        actual_output=answer.reply.get("output", msgspec.UNSET),
        actual_tool_calls=answer.reply.get("tool_calls", msgspec.UNSET),
        latency_ms=answer.latency_ms,
        agent_trace_id=answer.trace_id,
    )


def failed(test_case_id: str, error: str) -> ResultToPost:
    """A case whose agent call failed: no reply, and why."""
    return ResultToPost(test_case_id=test_case_id, agent_error=error)


def _timed(answer: AgentAnswer, started: float) -> AgentAnswer:
    latency_ms = round((time.monotonic() - started) * 1000)
    return msgspec.structs.replace(answer, latency_ms=latency_ms)


class HttpAgent:
    """POSTs each request to an HTTP endpoint."""

    def __init__(self, http: httpx.AsyncClient, url: str, timeout_s: float) -> None:
        self.http, self.url, self.timeout_s = http, url, timeout_s

    async def exchange(self, body: dict[str, Any]) -> AgentAnswer:
        """One POST: the answer, or why there is none."""
        started = time.monotonic()
        trace_id, traceparent = new_traceparent()
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.http.post(
                    self.url, json=body, headers={"traceparent": traceparent.decode()}
                )
        except TimeoutError:
            error = f"the agent call timed out after {self.timeout_s:g} s"
            return _timed(AgentAnswer(error=error), started)
        except httpx.HTTPError as exc:
            error = f"the agent call failed: {type(exc).__name__} {exc}"
            return _timed(AgentAnswer(error=error), started)
        if not response.is_success:
            error = f"the agent answered HTTP {response.status_code}"
            return _timed(AgentAnswer(error=error, trace_id=trace_id), started)
        answer = msgspec.structs.replace(read_reply(response.content), trace_id=trace_id)
        return _timed(answer, started)


class CommandAgent:
    """Runs a shell command per request: the request on stdin, the answer on stdout."""

    def __init__(self, command: str, timeout_s: float) -> None:
        self.command, self.timeout_s = command, timeout_s

    async def exchange(self, body: dict[str, Any]) -> AgentAnswer:
        """One run of the command: its answer, or why there is none."""
        started = time.monotonic()
        process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_REPLY_BYTES,
        )
        try:
            async with asyncio.timeout(self.timeout_s):
                stdout, stderr = await process.communicate(msgspec.json.encode(body))
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            error = f"the agent command timed out after {self.timeout_s:g} s"
            return _timed(AgentAnswer(error=error), started)
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-300:]
            error = f"the agent command exited with {process.returncode}: {tail}"
            return _timed(AgentAnswer(error=error), started)
        return _timed(read_reply(stdout), started)
