"""Importing into a dataset from the browser: a file (or pasted text) in JSON Lines or another
tool's format, detected when that is plain and chosen otherwise, imported whole or not at all.
JSON Lines goes back to the dataset; another tool's file gets a page saying, per source item,
what was imported and what was not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import UploadFile
from litestar.params import FromPath

from agentlasso.domain.datasets import Dataset
from agentlasso.errors import BodyTooLarge, Conflict, InvalidInput, MalformedBody
from agentlasso.http.auth import PlatformDep
from agentlasso.http.problems import status_of
from agentlasso.importers.formats import FORMAT_NAMES, FORMATS, SHORT_NAMES, detect_format
from agentlasso.services import tool_imports, transfer
from agentlasso.web.forms import text
from agentlasso.web.objects import dataset_named
from agentlasso.web.rendering import page, redirect
from agentlasso.web.sessions import session_of

# Enough of a file to tell its format by.
HEAD_BYTES = 64 * 1024
NOUNS = {"jsonl": "line", "csv": "row", "promptfoo": "test", "langsmith": "example",
         "langfuse": "item"}  # fmt: skip
DETECT = "detect"


class ImportPages(Controller):
    """The import form and its upload (served under the import's own body limit)."""

    @get("/datasets/{dataset_id:str}/import", name="import_form")
    async def import_form(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Upload (or paste) a file to import."""
        dataset = await dataset_named(request, platform, dataset_id)
        return _form(request, dataset)

    @post("/datasets/{dataset_id:str}/import", name="import_cases")
    async def import_cases(
        self, request: Request[Any, Any, Any], platform: PlatformDep, dataset_id: FromPath[str]
    ) -> Response[Any]:
        """Import every case, or nothing: the bad lines or items are listed by number."""
        dataset = await dataset_named(request, platform, dataset_id)
        form = await request.form()
        upload, pasted = form.get("file"), text(form, "pasted")
        chosen = text(form, "format") or DETECT
        limit = platform.settings.max_body_bytes
        if not isinstance(upload, UploadFile) or not upload.filename:
            upload = None
        if upload is None and len(pasted) > limit:
            problem = f"Paste at most {limit // 1024 // 1024} MiB; upload a file for more."
            return _form(request, dataset, status_code=413, problem=problem, chosen=chosen)
        if upload is not None:
            head = await upload.read(HEAD_BYTES)
            body, name = _upload_chunks(head, upload), upload.filename
        else:
            head = pasted.encode()
            body, name = _single_chunk(head), ""
        source_format = chosen if chosen in FORMATS else detect_format(name, head)
        if source_format is None:
            problem = "Which format is this file? Choose it under Format, and import it again."
            return _form(request, dataset, status_code=422, problem=problem, pasted=pasted,
                         ask_format=True)  # fmt: skip
        return await _import(request, platform, dataset, source_format, body, pasted)


async def _import(
    request: Request[Any, Any, Any], platform: PlatformDep, dataset: Dataset,
    source_format: str, body: AsyncIterator[bytes], pasted: str,
) -> Response[Any]:  # fmt: skip
    project_id = session_of(request).project_id
    settings = platform.settings
    limits = {"max_bytes": settings.max_import_bytes}
    failed = {"pasted": pasted, "chosen": source_format}
    try:
        if source_format == "jsonl":
            imported = await transfer.import_test_cases(
                platform, project_id, dataset.id, body, max_lines=settings.max_import_lines,
                **limits,
            )  # fmt: skip
            return redirect(request, f"/datasets/{dataset.id}?imported={imported}")
        report = await tool_imports.import_from_tool(
            platform, project_id, dataset.id, body, source_format,
            max_cases=settings.max_import_lines, **limits,
        )  # fmt: skip
    except InvalidInput as exc:
        return _form(request, dataset, status_code=422, problem=exc.detail, errors=exc.errors,
                     **failed)  # fmt: skip
    except (MalformedBody, BodyTooLarge, Conflict) as exc:
        return _form(request, dataset, status_code=status_of(exc), problem=exc.detail, **failed)
    return page(request, "import_report.html", dataset=dataset, report=report,
                format_name=SHORT_NAMES[source_format])  # fmt: skip


def _form(
    request: Request[Any, Any, Any], dataset: Dataset, status_code: int = 200, **shown: Any
) -> Response[Any]:
    """The import form, with what the person sent and what was wrong with it."""
    chosen = shown.pop("chosen", DETECT)
    return page(
        request, "import.html", status_code=status_code, dataset=dataset,
        problem=shown.get("problem"), errors=shown.get("errors", []),
        pasted=shown.get("pasted", ""), chosen=chosen, noun=NOUNS.get(chosen, "item"),
        formats=FORMAT_NAMES, ask_format=shown.get("ask_format", False),
    )  # fmt: skip


async def _upload_chunks(head: bytes, upload: UploadFile) -> AsyncIterator[bytes]:
    yield head
    while chunk := await upload.read(256 * 1024):
        yield chunk


async def _single_chunk(data: bytes) -> AsyncIterator[bytes]:
    yield data
