"""Calling the agent from the CI machine (`agentlasso ci`): an HTTP endpoint or a command.

This runs on the user's own CI, calling the user's own agent, so it has no address guard; the
platform's outbound calls (server mode) are another module.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

import httpx
import msgspec

from agentlasso.client import ResultToPost, RunTestCase

MAX_REPLY_BYTES = 16 * 1024 * 1024


class AgentCaller(Protocol):
    """Something that runs the agent on one case."""

    async def __call__(self, run_id: str, case: RunTestCase) -> ResultToPost: ...


def request_body(run_id: str, case: RunTestCase) -> dict[str, Any]:
    """What the agent receives: the input, where it comes from, the case and run, the context."""
    return {
        "input": case.input,
        "source": "agentlasso-test",
        "test_case_id": case.test_case_id,
        "run_id": run_id,
        "trial": 1,
        "context": case.data_context or {},
    }


def result_from_reply(test_case_id: str, raw: bytes) -> ResultToPost:
    """The agent's JSON answer as a result; an unreadable answer is the case's failure."""
    try:
        reply = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        return failed(test_case_id, f"the agent's answer is not JSON ({exc})")
    if not isinstance(reply, dict):
        return failed(test_case_id, "the agent's answer is not a JSON object")
    return ResultToPost(
        test_case_id=test_case_id,
        actual_output=reply.get("output", msgspec.UNSET),
        actual_tool_calls=reply.get("tool_calls", msgspec.UNSET),
    )


def failed(test_case_id: str, error: str) -> ResultToPost:
    """A case whose agent call failed: no reply, and why."""
    return ResultToPost(test_case_id=test_case_id, agent_error=error)


class HttpAgent:
    """POSTs each case to an HTTP endpoint."""

    def __init__(self, http: httpx.AsyncClient, url: str, timeout_s: float) -> None:
        self.http, self.url, self.timeout_s = http, url, timeout_s

    async def __call__(self, run_id: str, case: RunTestCase) -> ResultToPost:
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.http.post(self.url, json=request_body(run_id, case))
        except TimeoutError:
            return failed(case.test_case_id, f"the agent call timed out after {self.timeout_s:g} s")
        except httpx.HTTPError as exc:
            return failed(case.test_case_id, f"the agent call failed: {type(exc).__name__} {exc}")
        if not response.is_success:
            return failed(case.test_case_id, f"the agent answered HTTP {response.status_code}")
        return result_from_reply(case.test_case_id, response.content)


class CommandAgent:
    """Runs a shell command per case: the request on stdin, the answer on stdout."""

    def __init__(self, command: str, timeout_s: float) -> None:
        self.command, self.timeout_s = command, timeout_s

    async def __call__(self, run_id: str, case: RunTestCase) -> ResultToPost:
        process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_REPLY_BYTES,
        )
        try:
            async with asyncio.timeout(self.timeout_s):
                stdout, stderr = await process.communicate(
                    msgspec.json.encode(request_body(run_id, case))
                )
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            return failed(
                case.test_case_id, f"the agent command timed out after {self.timeout_s:g} s"
            )
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-300:]
            return failed(
                case.test_case_id, f"the agent command exited with {process.returncode}: {tail}"
            )
        return result_from_reply(case.test_case_id, stdout)
