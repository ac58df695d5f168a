"""Importing JSON Lines into a dataset from the browser: a file upload or pasted lines,
imported whole or not at all, with the bad lines listed by number."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import UploadFile
from litestar.params import FromPath

from agentlasso.errors import BodyTooLarge, Conflict, InvalidInput, MalformedBody
from agentlasso.http.auth import PlatformDep
from agentlasso.http.problems import status_of
from agentlasso.services import transfer
from agentlasso.web.forms import text
from agentlasso.web.objects import dataset_named
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import session_of


class ImportPages(Controller):
    """The import form and its upload (served under the import's own body limit)."""

    @get("/datasets/{dataset_id:str}/import", name="import_form")
    async def import_form(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Upload (or paste) JSON Lines."""
        dataset = await dataset_named(request, platform, dataset_id)
        return page(request, "import.html", dataset=dataset, problem=None, errors=[], pasted="")

    @post("/datasets/{dataset_id:str}/import", name="import_cases")
    async def import_cases(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Import every line, or nothing: the bad lines are listed by number."""
        project_id = session_of(request).project_id
        dataset = await dataset_named(request, platform, dataset_id)
        form = await request.form()
        upload = form.get("file")
        pasted = text(form, "pasted")
        settings = platform.settings
        if not _has_file(upload) and len(pasted) > settings.max_body_bytes:
            return page(
                request, "import.html", status_code=413, dataset=dataset, errors=[], pasted="",
                problem=f"Paste at most {settings.max_body_bytes // 1024 // 1024} MiB; upload a "
                "file for more.",
            )  # fmt: skip
        body = _upload_chunks(upload) if _has_file(upload) else _single_chunk(pasted.encode())
        try:
            imported = await transfer.import_test_cases(
                platform, project_id, dataset.id, body,
                max_bytes=settings.max_import_bytes, max_lines=settings.max_import_lines,
            )  # fmt: skip
        except InvalidInput as exc:
            return page(
                request, "import.html", status_code=422, dataset=dataset,
                problem=exc.detail, errors=exc.errors, pasted=pasted,
            )  # fmt: skip
        except (MalformedBody, BodyTooLarge, Conflict) as exc:
            return page(
                request, "import.html", status_code=status_of(exc), dataset=dataset,
                problem=exc.detail, errors=[], pasted=pasted,
            )  # fmt: skip
        return redirect(request, f"/datasets/{dataset.id}?imported={imported}")


def _has_file(upload: object) -> bool:
    return isinstance(upload, UploadFile) and bool(upload.filename)


async def _upload_chunks(upload: Any) -> AsyncIterator[bytes]:
    while chunk := await upload.read(256 * 1024):
        yield chunk


async def _single_chunk(data: bytes) -> AsyncIterator[bytes]:
    yield data
