"""Settings, API keys: create one of a chosen scope (shown once), revoke one."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, post
from litestar.params import FromPath

from agentlasso.domain.scopes import parse_scope
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import api_keys as key_service
from agentlasso.services.api_keys import NewKey
from agentlasso.web.once import once
from agentlasso.web.rendering import redirect
from agentlasso.web.sessions import caller_of, session_of
from agentlasso.web.settings_pages import settings_page


class KeyPages(Controller):
    """/settings/keys: the API keys section's forms."""

    path = "/settings"

    @post("/keys", name="create_key")
    async def create_key(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """A new key of the scope chosen, shown this once."""
        project_id = session_of(request).project_id
        form = await request.form()
        scope = parse_scope(form.get("scope"))
        if scope is None:
            errors = {"scope": "Choose the key's scope: admin, ci, ingest or read."}
            return await settings_page(request, platform, key_errors=errors, status_code=422)
        created: list[NewKey] = []

        async def create() -> str:
            created.append(
                await key_service.create_project_key(
                    platform, project_id, scope, caller_of(request)
                )
            )
            return "/settings#api-keys"

        await once(platform, project_id, form.get("form_id"), "/settings#api-keys", create)
        if not created:
            # The same form sent again (a double click): the browser shows this answer, not
            # the first one, which held the key.
            return await settings_page(request, platform, key_sent_twice=True)
        return await settings_page(request, platform, new_key=created[0])

    @post("/keys/{key_id:str}/revoke", name="revoke_key")
    async def revoke_key(
        self, request: Request[Any, Any, Any], platform: PlatformDep, key_id: FromPath[str]
    ) -> Response[Any]:
        """Revoke a key at once (a session opened with it ends too)."""
        project_id = session_of(request).project_id
        await key_service.revoke_project_key(
            platform, project_id, parse_id(key_id, "key"), caller_of(request)
        )
        return redirect(request, "/settings#api-keys")
