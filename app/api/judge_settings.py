"""/api/v1/judge-settings: the project's own AI judge key (write-only) and model."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, patch
from litestar.params import JSONBody

from agentlasso.http.auth import CallerDep, PlatformDep, ProjectId
from agentlasso.services import judge_settings as service

Model = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
ApiKey = Annotated[
    str,
    msgspec.Meta(
        min_length=1, max_length=500, extra_json_schema={"pattern": f"^{service.KEY_PATTERN}$"}
    ),
]


class JudgeSettingsUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Fields to change; absent ones are kept, null removes the project's own."""

    anthropic_api_key: ApiKey | msgspec.UnsetType | None = msgspec.UNSET
    model: Model | msgspec.UnsetType | None = msgspec.UNSET
    # Failures of an AI-judge criterion people disagree with (kappa under 0.6 over 20 labels
    # or more) count as not graded, in runs started after.
    doubted_judge_not_graded: bool | msgspec.UnsetType = msgspec.UNSET


class JudgeSettings(msgspec.Struct, kw_only=True):
    """The project's judge: whether it has its own key (never the key), and the model used."""

    anthropic_api_key_set: bool
    model: str | None
    server_key_set: bool
    effective_model: str
    judge_configured: bool
    doubted_judge_not_graded: bool


def settings_out(view: service.JudgeSettingsView) -> JudgeSettings:
    """The API shape of the project's judge settings."""
    return JudgeSettings(**msgspec.structs.asdict(view))


class JudgeSettingsController(Controller):
    """The caller's project's judge settings."""

    path = "/judge-settings"
    tags = ("judge",)

    @get(operation_id="getJudgeSettings")
    async def read(self, platform: PlatformDep, project_id: ProjectId) -> JudgeSettings:
        """Whether the project has its own Anthropic key, and which model judges its runs."""
        return settings_out(await service.get_judge_settings(platform, project_id))

    @patch(operation_id="updateJudgeSettings")
    async def update(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        caller: CallerDep,
        data: JSONBody[JudgeSettingsUpdate],
    ) -> JudgeSettings:
        """Set the project's own key (sealed at rest, never shown again) or model; null removes
        them, so the server's are used."""
        changes = {
            field: value
            for field in data.__struct_fields__
            if (value := getattr(data, field)) is not msgspec.UNSET
        }
        view = await service.update_judge_settings(platform, project_id, changes, caller)
        return settings_out(view)
