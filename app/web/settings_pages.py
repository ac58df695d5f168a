"""Settings: the project's API keys, its agent (the one Preview calls), and its AI judge."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import msgspec
import msgspec.inspect
from litestar import Controller, Request, Response, get, post

from agentlasso.agent_wire.protocols import PROTOCOL_LABELS
from agentlasso.agents import AgentCallResult
from agentlasso.domain.agents import Agent
from agentlasso.domain.audit import Caller
from agentlasso.domain.scopes import SCOPE_MEANINGS, Scope
from agentlasso.errors import InvalidInput, TooManyRequests
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.schemas.agents import AgentCreate
from agentlasso.schemas.traces import TraceSettingsUpdate
from agentlasso.services import agents as agent_service
from agentlasso.services import api_keys as key_service
from agentlasso.services import judge_settings as judge_service
from agentlasso.services import traces as trace_service
from agentlasso.services.api_keys import NewKey
from agentlasso.services.judge_settings import KeyTest
from agentlasso.services.platform import Platform
from agentlasso.web.agent_reply import observed, what_the_agent_did
from agentlasso.web.forms import (
    by_field,
    checked,
    header_lines,
    json_field,
    number_field,
    optional_text,
    text,
)
from agentlasso.web.once import new_form_id, once
from agentlasso.web.page_limits import with_retry_after
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import caller_of, session_of

AGENT_FIELDS = (
    "name", "url", "protocol", "model", "headers", "timeout_s", "max_concurrency",
    "system_prompt", "tools",
)  # fmt: skip


class SettingsPages(Controller):
    """/settings and its forms."""

    path = "/settings"

    @get("/", name="settings")
    async def settings(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Keys, the agent, the judge."""
        return await settings_page(request, platform)

    @post("/agent", name="save_agent")
    async def save_agent(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Register the project's agent, or change it."""
        project_id = session_of(request).project_id
        form = await request.form()
        current = await agent_service.default_agent(platform, project_id)
        errors: dict[str, str] = {}
        fields = _agent_fields(form, current, errors)
        if not errors:
            try:
                await _store_agent(platform, caller_of(request), project_id, current, fields, form)
            except InvalidInput as exc:
                errors = by_field(exc.errors)
        if errors:
            if text(form, "headers").strip() and "headers" not in errors:
                errors["headers"] = "Headers are never shown back: type them again."
            return await settings_page(
                request, platform, agent_form=form, agent_errors=errors, status_code=422
            )
        return redirect(request, "/settings?agent_saved=1#your-agent")

    @post("/agent/default", name="choose_agent")
    async def choose_agent(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Choose which of the project's agents Preview and Send test message call."""
        project_id = session_of(request).project_id
        form = await request.form()
        agent_id = parse_id(text(form, "default_agent"), "agent")
        await agent_service.choose_default_agent(platform, project_id, agent_id)
        return redirect(request, "/settings#your-agent")

    @post("/agent/test", name="test_agent")
    async def test_agent(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Call the agent once with a message (`source: agentlasso-sandbox`); show what came
        back."""
        project_id = session_of(request).project_id
        form = await request.form()
        agent = await agent_service.default_agent(platform, project_id)
        message = text(form, "message") or "Hello"
        if agent is None:
            errors = {"message": "Register your agent first (the form above)."}
            return await settings_page(
                request, platform, test_errors=errors, message=message, status_code=409
            )
        try:
            call = await agent_service.invoke_agent(platform, project_id, agent.id, message, None)
        except TooManyRequests as exc:
            refused = await settings_page(
                request, platform, test_errors={"message": exc.detail}, message=message,
                status_code=429,
            )  # fmt: skip
            return with_retry_after(refused, exc)
        return await settings_page(request, platform, test_call=call, message=message)

    @post("/judge", name="save_judge")
    async def save_judge(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """Set the project's own Anthropic key (write-only, sealed) and model."""
        project_id = session_of(request).project_id
        form = await request.form()
        changes: dict[str, Any] = {"model": optional_text(form, "model")}
        key = text(form, "anthropic_api_key").strip()
        if key:
            changes["anthropic_api_key"] = key
        elif form.get("remove_key") == "on":
            changes["anthropic_api_key"] = None
        try:
            await judge_service.update_judge_settings(
                platform, project_id, changes, caller_of(request)
            )
        except InvalidInput as exc:
            return await settings_page(
                request, platform, judge_form=form, judge_errors=by_field(exc.errors),
                status_code=422,
            )  # fmt: skip
        return redirect(request, "/settings?judge_saved=1#ai-judge")

    @post("/judge/test", name="test_judge")
    async def test_judge(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """One minimal call with the key and model the project's runs use."""
        project_id = session_of(request).project_id
        try:
            outcome = await judge_service.try_judge_key(platform, project_id)
        except TooManyRequests as exc:
            refused = KeyTest(ok=False, model="", detail=exc.detail)
            answer = await settings_page(request, platform, key_test=refused, status_code=429)
            return with_retry_after(answer, exc)
        return await settings_page(request, platform, key_test=outcome)

    @post("/traces", name="save_trace_settings")
    async def save_traces(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """How many days the project keeps its traces (1 to 3650, as the API takes)."""
        project_id = session_of(request).project_id
        form = await request.form()
        raw = text(form, "retention_days").strip()
        errors: dict[str, str] = {}
        days = raw if not raw.lstrip("-").isdigit() or len(raw) > 9 else int(raw)
        written = checked({"retention_days": days}, TraceSettingsUpdate, errors)
        if written is None:
            return await settings_page(
                request, platform, retention_typed=raw, trace_errors=errors, status_code=422
            )
        await trace_service.set_retention_days(
            platform, project_id, written.retention_days, caller_of(request)
        )
        return redirect(request, "/settings?traces_saved=1#traces")


def _agent_fields(
    form: Mapping[str, Any], current: Agent | None, errors: dict[str, str]
) -> dict[str, Any]:
    """The agent form's fields as the API takes them (headers only when some were typed)."""
    fields: dict[str, Any] = {
        "name": text(form, "name").strip() or (current.name if current else "My agent"),
        "url": text(form, "url").strip(),
        "protocol": text(form, "protocol") or "agentlasso",
        "model": optional_text(form, "model"),
        "timeout_s": _or_default(number_field(form, "timeout_s", float, errors), "timeout_s"),
        "max_concurrency": number_field(form, "max_concurrency", int, errors),
        "system_prompt": optional_text(form, "system_prompt"),
        "tools": json_field(form, "tools", errors, list),
    }
    headers = header_lines(text(form, "headers"), errors)
    if headers:
        fields["headers"] = headers
    elif form.get("remove_headers") == "on" or current is None:
        fields["headers"] = None
    checked({**fields, "headers": fields.get("headers")}, AgentCreate, errors)
    return fields


def _or_default(value: Any, field: str) -> Any:
    """The value, or the API's default for the field when the form left it blank."""
    if value is not None:
        return value
    shape = msgspec.inspect.type_info(AgentCreate)
    assert isinstance(shape, msgspec.inspect.StructType)
    return next(each.default for each in shape.fields if each.name == field)


async def _store_agent(
    platform: Platform,
    caller: Caller,
    project_id: UUID,
    current: Agent | None,
    fields: dict[str, Any],
    form: Mapping[str, Any],
) -> None:
    if current is None:

        async def create() -> str:
            spec = agent_service.AgentSpec(**fields)
            agent = await agent_service.create_agent(platform, project_id, spec, caller)
            await agent_service.choose_default_agent(platform, project_id, agent.id)
            return "/settings#your-agent"

        await once(platform, project_id, form.get("form_id"), "/settings#your-agent", create)
        return
    await agent_service.update_agent(platform, project_id, current.id, fields, caller)


async def settings_page(
    request: Request[Any, Any, Any],
    platform: Platform,
    *,
    new_key: NewKey | None = None,
    key_sent_twice: bool = False,
    key_errors: dict[str, str] | None = None,
    agent_form: Mapping[str, Any] | None = None,
    agent_errors: dict[str, str] | None = None,
    test_call: AgentCallResult | None = None,
    test_errors: dict[str, str] | None = None,
    message: str = "",
    judge_form: Mapping[str, Any] | None = None,
    judge_errors: dict[str, str] | None = None,
    key_test: KeyTest | None = None,
    retention_typed: str | None = None,
    trace_errors: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response[Any]:
    """The Settings page, showing what its last form did (or why it was refused)."""
    project_id = session_of(request).project_id
    saved = request.query_params
    return page(
        request,
        "settings.html",
        status_code=status_code,
        keys=await key_service.list_project_keys(platform, project_id),
        new_key=new_key,
        key_sent_twice=key_sent_twice,
        key_errors=key_errors or {},
        scope_choices=[(scope.value, f"{scope.value}: {SCOPE_MEANINGS[scope]}") for scope in Scope],
        **await _agent_section(platform, project_id, agent_form, agent_errors),
        **_test_call_section(test_call, test_errors),
        message=message,
        **await _judge_section(platform, project_id, judge_form, judge_errors, key_test),
        **await _traces_section(platform, project_id, retention_typed, trace_errors),
        agent_saved=saved.get("agent_saved") is not None,
        judge_saved=saved.get("judge_saved") is not None,
        traces_saved=saved.get("traces_saved") is not None,
        form_id=new_form_id(),
    )


async def _agent_section(
    platform: Platform,
    project_id: UUID,
    agent_form: Mapping[str, Any] | None,
    agent_errors: dict[str, str] | None,
) -> dict[str, Any]:
    """The agent form: the default agent's values, or what was typed when it was refused."""
    agent = await agent_service.default_agent(platform, project_id)
    agents = await agent_service.list_agents(platform, project_id, 0, 100)
    values = _agent_values(agent) if agent_form is None else _typed_agent_values(agent_form)
    return {
        "agent": agent,
        "agents": agents,
        "agent_values": values,
        "agent_errors": agent_errors or {},
        "agent_choices": [(str(each.id), each.name) for each in agents],
        "protocol_choices": list(PROTOCOL_LABELS.items()),
    }


def _test_call_section(
    test_call: AgentCallResult | None, test_errors: dict[str, str] | None
) -> dict[str, Any]:
    """The answer of a test call to the agent, and what the agent did in it."""
    return {
        "test_call": test_call,
        "test_did": what_the_agent_did(observed(test_call)) if test_call else None,
        "test_errors": test_errors or {},
    }


async def _judge_section(
    platform: Platform,
    project_id: UUID,
    judge_form: Mapping[str, Any] | None,
    judge_errors: dict[str, str] | None,
    key_test: KeyTest | None,
) -> dict[str, Any]:
    """The AI judge form: its model (or the server's default) and its key."""
    judge = await judge_service.get_judge_settings(platform, project_id)
    return {
        "judge": judge,
        "judge_values": {
            "model": text(judge_form, "model") if judge_form else judge.model or "",
            "remove_key": "on" if judge_form and judge_form.get("remove_key") == "on" else "",
        },
        "model_choices": [
            ("", f"The server default ({platform.settings.judge_model})"),
            *((model, model) for model in sorted(platform.settings.judge_prices)),
        ],
        "judge_errors": judge_errors or {},
        "key_test": key_test,
    }


async def _traces_section(
    platform: Platform,
    project_id: UUID,
    retention_typed: str | None,
    trace_errors: dict[str, str] | None,
) -> dict[str, Any]:
    """The traces form: how many days traces are kept, or what was typed when it was refused."""
    if retention_typed is None:
        retention_typed = str(await trace_service.retention_days(platform, project_id))
    return {"retention_days": retention_typed, "trace_errors": trace_errors or {}}


def _typed_agent_values(form: Mapping[str, Any]) -> dict[str, str]:
    """What the person typed, shown back with their errors; but never the headers' values,
    which are write-only even before they are saved."""
    values = {name: text(form, name) for name in AGENT_FIELDS} | {"headers": ""}
    values["remove_headers"] = "on" if form.get("remove_headers") == "on" else ""
    return values


def _agent_values(agent: Agent | None) -> dict[str, str]:
    if agent is None:
        return {name: "" for name in AGENT_FIELDS} | {
            "protocol": "agentlasso",
            "timeout_s": f"{_or_default(None, 'timeout_s'):g}",
            "remove_headers": "",
        }
    return {
        "name": agent.name,
        "url": agent.url,
        "protocol": agent.protocol,
        "model": agent.model or "",
        "headers": "",
        "timeout_s": f"{agent.timeout_s:g}",
        "max_concurrency": "" if agent.max_concurrency is None else str(agent.max_concurrency),
        "system_prompt": agent.system_prompt or "",
        "tools": "" if agent.tools is None else json.dumps(agent.tools, indent=2),
        "remove_headers": "",
    }
