"""A project's own AI judge: its Anthropic key (write-only, sealed at rest) and model."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import msgspec

from agentlasso.db import projects
from agentlasso.db.pool import Connection
from agentlasso.domain.audit import Caller
from agentlasso.domain.judging import ProjectJudge, judge_key_owner
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.secrets_box import seal
from agentlasso.services import audit
from agentlasso.services.platform import Platform

NO_KEY = "No key to test: set the project's Anthropic API key (or the server's ANTHROPIC_API_KEY)."
# Visible ASCII without spaces: what an API key is, and what an HTTP header can carry (the
# API's description says the same).
KEY_PATTERN = r"[\x21-\x7e]{1,500}"
_KEY = re.compile(KEY_PATTERN)


class JudgeSettingsView(msgspec.Struct, frozen=True, kw_only=True):
    """What a project sees of its judge: never the key, only whether there is one."""

    anthropic_api_key_set: bool
    model: str | None
    # What its runs are judged with: its own key or the server's, its model or the server's.
    server_key_set: bool
    effective_model: str
    judge_configured: bool
    # Failures of a criterion people disagree with count as not graded (default off).
    doubted_judge_not_graded: bool


async def get_judge_settings(platform: Platform, project_id: UUID) -> JudgeSettingsView:
    """The project's judge settings as it may see them."""
    return _view(platform, await projects.judge_settings(platform.pool, project_id))


async def update_judge_settings(
    platform: Platform, project_id: UUID, changes: dict[str, Any], caller: Caller
) -> JudgeSettingsView:
    """Set (or with null remove) the project's own key and model; absent fields are kept."""
    _check(platform, changes)
    async with platform.pool.acquire() as connection, connection.transaction():
        current = await projects.judge_settings(connection, project_id)
        updated = msgspec.structs.replace(current)
        if "anthropic_api_key" in changes:
            key = changes["anthropic_api_key"]
            owner = judge_key_owner(project_id)
            sealed = None if key is None else seal(platform.secret_key, key.encode(), owner)
            updated = msgspec.structs.replace(updated, key_encrypted=sealed)
        if "model" in changes:
            updated = msgspec.structs.replace(updated, model=changes["model"])
        if "doubted_judge_not_graded" in changes:
            doubted = bool(changes["doubted_judge_not_graded"])
            updated = msgspec.structs.replace(updated, doubted_not_graded=doubted)
        await projects.set_judge_settings(connection, project_id, updated)
        await _record(connection, project_id, caller, current, updated)
    return _view(platform, updated)


async def _record(
    connection: Connection,
    project_id: UUID,
    caller: Caller,
    before: ProjectJudge,
    after: ProjectJudge,
) -> None:
    """An entry for the key set or removed (never the key), and one for the model changed."""
    if after.key_encrypted is not None and after.key_encrypted != before.key_encrypted:
        replaced = before.key_encrypted is not None
        await audit.record(connection, project_id, caller, "judge_key.set", replaced=replaced)
    elif after.key_encrypted is None and before.key_encrypted is not None:
        await audit.record(connection, project_id, caller, "judge_key.removed")
    if after.doubted_not_graded != before.doubted_not_graded:
        await audit.record(
            connection, project_id, caller, "judge_doubt.changed",
            before=before.doubted_not_graded, after=after.doubted_not_graded,
        )  # fmt: skip
    if after.model != before.model:
        await audit.record(
            connection, project_id, caller, "judge_model.changed",
            before=before.model, after=after.model,
        )  # fmt: skip


def _check(platform: Platform, changes: dict[str, Any]) -> None:
    problems = []
    key = changes.get("anthropic_api_key")
    if key is not None and not _KEY.fullmatch(key):
        problems.append(FieldError(
            pointer="/anthropic_api_key",
            detail="An Anthropic API key is 1 to 500 visible ASCII characters, with no spaces.",
        ))  # fmt: skip
    model = changes.get("model")
    prices = platform.settings.judge_prices
    if model is not None and model not in prices:
        problems.append(FieldError(
            pointer="/model",
            detail=f"This server has no price for {model!r}; one of: {', '.join(sorted(prices))}.",
        ))  # fmt: skip
    if problems:
        raise InvalidInput("The judge settings cannot be used as given.", problems)


def _view(platform: Platform, judge: ProjectJudge) -> JudgeSettingsView:
    settings = platform.settings
    own_key = judge.key_encrypted is not None
    return JudgeSettingsView(
        anthropic_api_key_set=own_key,
        model=judge.model,
        server_key_set=bool(settings.anthropic_api_key),
        effective_model=judge.model or settings.judge_model,
        judge_configured=own_key or bool(settings.anthropic_api_key),
        doubted_judge_not_graded=judge.doubted_not_graded,
    )


async def judge_configured(platform: Platform, project_id: UUID) -> bool:
    """Whether the project's runs have a judge: the server's key, or its own."""
    if platform.settings.anthropic_api_key:
        return True
    return (await projects.judge_settings(platform.pool, project_id)).key_encrypted is not None


class KeyTest(msgspec.Struct, frozen=True, kw_only=True):
    """What one minimal call with the project's judge said."""

    ok: bool
    model: str
    detail: str


async def try_judge_key(platform: Platform, project_id: UUID) -> KeyTest:
    """Make one minimal call with the key and model the project's runs use; say what happened."""
    view = _view(platform, await projects.judge_settings(platform.pool, project_id))
    if not view.judge_configured:
        return KeyTest(ok=False, model=view.effective_model, detail=NO_KEY)
    from agentlasso.judge.keys import JudgeClients  # loads the model SDK: only when asked

    await platform.limits.take_preview_calls(project_id, 1, "this key test")
    clients = JudgeClients(platform.settings, platform.pool, platform.secret_key)
    try:
        client = await clients.for_project(project_id)
        if client is None:
            return KeyTest(ok=False, model=view.effective_model, detail=NO_KEY)
        spent = None
        if await clients.uses_server_key(project_id):
            spent = await platform.server_spend.spent_reason(project_id)
        if spent is not None:
            return KeyTest(ok=False, model=view.effective_model, detail=f"Not tested: {spent}.")
        failure = await client.check_key()
    finally:
        await clients.aclose()
    if failure is None:
        detail = f"The key works: {view.effective_model} answered."
        return KeyTest(ok=True, model=view.effective_model, detail=detail)
    return KeyTest(ok=False, model=view.effective_model, detail=failure)
