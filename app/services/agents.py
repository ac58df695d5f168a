"""Registered agents: the address guard at registration, headers sealed at rest, a free try."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.agents import AgentCallResult, check_agent_url
from agentlasso.agents.address_guard import origin_of
from agentlasso.agents.headers import open_headers, seal_headers, target_for
from agentlasso.db import agents as agent_rows
from agentlasso.db import projects as project_rows
from agentlasso.db.agents import AgentValues
from agentlasso.db.pool import Connection
from agentlasso.domain.agent_headers import HEADER_NAME, HEADER_VALUE, RESERVED_HEADERS
from agentlasso.domain.agents import Agent
from agentlasso.domain.audit import Caller
from agentlasso.domain.json_pointers import json_pointer
from agentlasso.domain.stored_text import refuse_nul
from agentlasso.errors import Conflict, FieldError, InvalidInput, NotFound
from agentlasso.grading.written_checks import declared_tool_problems
from agentlasso.services import audit
from agentlasso.services.agent_endpoints import Endpoint, checked_endpoint
from agentlasso.services.platform import Platform

_MISSING = "No agent with this id in your project."
SANDBOX_SOURCE = "agentlasso-sandbox"
PREVIEW_SOURCE = "agentlasso-preview"


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a project registers about an agent (headers in the clear, before sealing)."""

    name: str
    url: str
    headers: dict[str, str] | None = None
    timeout_s: float = 30.0
    max_concurrency: int | None = None
    system_prompt: str | None = None
    tools: list[dict[str, Any]] | None = None
    protocol: str = "agentlasso"
    model: str | None = None


async def create_agent(
    platform: Platform, project_id: UUID, spec: AgentSpec, caller: Caller
) -> Agent:
    """Register an agent whose URL passed the address guard."""
    refuse_nul(msgspec.structs.asdict(spec))
    allow_private = platform.settings.allow_private_agents
    headers = await _checked_input(spec.url, spec.headers, spec.tools, allow_private=allow_private)
    card = await checked_endpoint(platform, _endpoint_of(spec, headers))
    # The id is chosen here because the sealed headers are bound to it.
    agent_id = uuid.uuid4()
    values = AgentValues(
        name=spec.name,
        url=spec.url,
        headers_encrypted=seal_headers(platform.secret_key, agent_id, headers),
        header_names=sorted(headers),
        timeout_s=spec.timeout_s,
        max_concurrency=spec.max_concurrency,
        system_prompt=spec.system_prompt,
        tools=spec.tools,
        protocol=spec.protocol,
        model=spec.model,
        a2a_card=card,
    )
    async with platform.pool.acquire() as connection, connection.transaction():
        agent = await agent_rows.insert_agent(connection, project_id, agent_id, values)
        await audit.record(
            connection, project_id, caller, "agent.created", audit.about("agent", agent_id),
            name=agent.name, header_names=agent.header_names,
        )  # fmt: skip
    return agent


async def get_agent(platform: Platform, project_id: UUID, agent_id: UUID) -> Agent:
    """The agent, or NotFound."""
    agent = await agent_rows.get_agent(platform.pool, project_id, agent_id)
    if agent is None:
        raise NotFound(_MISSING)
    return agent


async def list_agents(
    platform: Platform, project_id: UUID, after_seq: int, limit: int
) -> list[Agent]:
    """A page of the project's agents."""
    return await agent_rows.list_agents(platform.pool, project_id, after_seq, limit)


async def update_agent(
    platform: Platform, project_id: UUID, agent_id: UUID, changes: dict[str, Any], caller: Caller
) -> Agent:
    """Change the named fields, keeping the others; given headers replace the old ones whole."""
    refuse_nul(changes)
    # Before the transaction: the guard resolves the host, which may take a while.
    headers = await _checked_input(
        changes.get("url"),
        changes.get("headers"),
        changes.get("tools"),
        allow_private=platform.settings.allow_private_agents,
    )
    stored = {name: value for name, value in changes.items() if name != "headers"}
    if "headers" in changes:
        stored["headers_encrypted"] = seal_headers(platform.secret_key, agent_id, headers)
        stored["header_names"] = sorted(headers)
    if _ENDPOINT_FIELDS & changes.keys():
        before = await get_agent(platform, project_id, agent_id)
        # Before the endpoint is asked anything: it would be sent the old headers.
        _refuse_headers_to_a_new_origin(before, changes)
        stored["a2a_card"] = await checked_endpoint(
            platform, _changed_endpoint(platform.secret_key, before, changes, headers)
        )
    async with platform.pool.acquire() as connection, connection.transaction():
        current = await agent_rows.get_agent(connection, project_id, agent_id)
        if current is None:
            raise NotFound(_MISSING)
        _refuse_headers_to_a_new_origin(current, changes)
        values = msgspec.structs.replace(agent_rows.values_of(current), **stored)
        updated = await agent_rows.update_agent(connection, project_id, agent_id, values)
        assert updated is not None
        changed = _changed_fields(platform.secret_key, current, changes, headers)
        if changed:
            await _record_change(connection, project_id, caller, updated, changed)
    return updated


# A change to any of these is checked against the endpoint again (the A2A card read afresh).
_ENDPOINT_FIELDS = frozenset({"url", "protocol", "model", "headers"})


def _endpoint_of(spec: AgentSpec, headers: dict[str, str]) -> Endpoint:
    """The endpoint a new agent's spec describes."""
    return Endpoint(
        protocol=spec.protocol, url=spec.url, headers=headers, timeout_s=spec.timeout_s,
        model=spec.model, system_prompt=spec.system_prompt,
    )  # fmt: skip


def _changed_endpoint(
    secret_key: bytes, current: Agent, changes: dict[str, Any], headers: dict[str, str]
) -> Endpoint:
    """The endpoint the agent will have once the changes are made."""
    return Endpoint(
        protocol=changes.get("protocol", current.protocol),
        url=changes.get("url", current.url),
        headers=headers if "headers" in changes else open_headers(secret_key, current),
        timeout_s=changes.get("timeout_s", current.timeout_s),
        model=changes.get("model", current.model),
        system_prompt=changes.get("system_prompt", current.system_prompt),
    )


def _changed_fields(
    secret_key: bytes, current: Agent, changes: dict[str, Any], headers: dict[str, str]
) -> list[str]:
    """The names of the fields whose value the change replaced with another."""
    changed = [
        name for name, value in changes.items()
        if name != "headers" and getattr(current, name) != value
    ]  # fmt: skip
    if "headers" in changes:
        try:
            kept = open_headers(secret_key, current)
        except Conflict:
            kept = None  # sealed under another key: whatever they were, they are replaced
        if kept != headers:
            changed.append("headers")
    return sorted(changed)


async def _record_change(
    connection: Connection, project_id: UUID, caller: Caller, agent: Agent, changed: list[str]
) -> None:
    """One entry for one change: `agent.headers_changed` (with the new headers' names, never
    their values) when its headers were among the fields it changed."""
    subject = audit.about("agent", agent.id)
    if "headers" in changed:
        await audit.record(
            connection, project_id, caller, "agent.headers_changed", subject,
            fields=changed, header_names=agent.header_names,
        )  # fmt: skip
        return
    await audit.record(connection, project_id, caller, "agent.changed", subject, fields=changed)


def _refuse_headers_to_a_new_origin(current: Agent, changes: dict[str, Any]) -> None:
    """A URL moved to another origin does not take the old (write-only) headers with it.

    Otherwise a leaked project key could point the agent at its own host and be sent the
    agent's Authorization header on the next call.
    """
    new_url = changes.get("url")
    if new_url is None or "headers" in changes or current.headers_encrypted is None:
        return
    if origin_of(new_url) == origin_of(current.url):
        return
    detail = (
        "The agent's headers were set for its old URL's origin: send them again with the new "
        "URL (or `headers: null` to drop them)."
    )
    raise InvalidInput(detail, [FieldError(pointer="/headers", detail=detail)])


async def delete_agent(
    platform: Platform, project_id: UUID, agent_id: UUID, caller: Caller
) -> None:
    """Delete an agent (runs that called it keep their results)."""
    async with platform.pool.acquire() as connection, connection.transaction():
        name = await agent_rows.delete_agent(connection, project_id, agent_id)
        if name is None:
            raise NotFound(_MISSING)
        subject = audit.about("agent", agent_id)
        await audit.record(connection, project_id, caller, "agent.deleted", subject, name=name)


async def invoke_agent(
    platform: Platform,
    project_id: UUID,
    agent_id: UUID,
    agent_input: str | dict[str, Any],
    context: dict[str, Any] | None,
) -> AgentCallResult:
    """Call the agent once, outside any run; its failure is in the result, not raised."""
    agent = await get_agent(platform, project_id, agent_id)
    await platform.limits.take_preview_calls(project_id, 1, "this test message")
    return await call_agent_once(platform, agent, agent_input, context, source=SANDBOX_SOURCE)


async def call_agent_once(
    platform: Platform,
    agent: Agent,
    agent_input: str | dict[str, Any],
    context: dict[str, Any] | None,
    *,
    source: str,
    test_case_id: UUID | None = None,
    tool_fixtures: dict[str, Any] | None = None,
) -> AgentCallResult:
    """One call to the agent outside any run (a free try, a preview), as `source` says."""
    body: dict[str, Any] = {
        "input": agent_input,
        "source": source,
        "run_id": None,
        "trial": 1,
        "context": context or {},
    }
    if test_case_id is not None:
        body["test_case_id"] = str(test_case_id)
    if tool_fixtures:
        body["tool_fixtures"] = tool_fixtures
    return await platform.agent_client.call(target_for(platform.secret_key, agent), body)


async def default_agent(platform: Platform, project_id: UUID) -> Agent | None:
    """The agent Preview and Send test message call: the one the project chose, else its
    first; None when it has registered none."""
    return await agent_rows.default_agent(platform.pool, project_id)


async def choose_default_agent(platform: Platform, project_id: UUID, agent_id: UUID) -> None:
    """Make one of the project's agents its default; NotFound when it is not one of them."""
    if not await project_rows.set_default_agent(platform.pool, project_id, agent_id):
        raise NotFound(_MISSING)


async def _checked_input(
    url: str | None,
    headers: dict[str, str] | None,
    tools: list[dict[str, Any]] | None,
    *,
    allow_private: bool,
) -> dict[str, str]:
    """The headers with lower-case names; InvalidInput naming every bad header, the URL and
    each declared tool schema that cannot be compiled."""
    problems = [
        FieldError(pointer="/tools" + at, detail=detail)
        for at, detail in declared_tool_problems(tools)
    ]
    if url is not None:
        # The guard also refuses anything but http and https.
        reason = await check_agent_url(url, allow_private=allow_private)
        if reason:
            problems.append(FieldError(pointer="/url", detail=reason))
    normalized: dict[str, str] = {}
    for name, value in (headers or {}).items():
        problem = _header_problem(name, value, normalized)
        if problem:
            problems.append(FieldError(pointer=json_pointer(["headers", name]), detail=problem))
        normalized[name.lower()] = value
    if problems:
        raise InvalidInput("The agent cannot be used as given.", problems)
    return normalized


def _header_problem(name: str, value: str, seen: dict[str, str]) -> str | None:
    if not HEADER_NAME.fullmatch(name):
        return f"{name!r} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)."
    if name.lower() in RESERVED_HEADERS:
        return f"{name!r} is set by AgentLasso itself and cannot be configured."
    if name.lower() in seen:
        return f"{name!r} is given twice (header names are case-insensitive)."
    if not HEADER_VALUE.fullmatch(value):
        return (
            "A header value may hold visible ASCII characters, with spaces and tabs only "
            "between them (none at the start or the end)."
        )
    return None
