"""Freezing a dataset version from its page (the versions are listed there, each with a Run
that opens the Start a run form with it chosen)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, post
from litestar.params import FromPath

from agentlasso.errors import Conflict, InvalidInput
from agentlasso.http.auth import PlatformDep
from agentlasso.services import dataset_versions as version_service
from agentlasso.web.forms import text
from agentlasso.web.objects import dataset_named
from agentlasso.web.once import once
from agentlasso.web.rendering import redirect
from agentlasso.web.sessions import session_of
from agentlasso.web.studio import dataset_page


class VersionPages(Controller):
    """A dataset's versions."""

    @post("/datasets/{dataset_id:str}/versions", name="freeze_version")
    async def freeze(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Freeze the current revision of every case under the name typed; back to the
        dataset's page, which lists it (or says why it could not be frozen)."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        form = await request.form()
        name = text(form, "version_name").strip()
        done = f"/datasets/{dataset.id}?frozen=1#versions"

        async def freeze() -> str:
            await version_service.freeze_version(platform, project_id, dataset.id, name)
            return done

        try:
            # A double click freezes one version, not one and a 409 for the same name.
            location = await once(platform, project_id, form.get("form_id"), done, freeze)
        except (InvalidInput, Conflict) as exc:
            status = 409 if isinstance(exc, Conflict) else 422
            errors = {"version_name": exc.detail}
            return await dataset_page(
                request, platform, dataset, None, {}, errors, status, version_name=name
            )
        return redirect(request, location)
