"""The web app's routes: sign-in open to all, every other page behind a session."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from litestar import Request, Response, Router
from litestar.exceptions import HTTPException, ValidationException
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

from agentlasso.config import Settings
from agentlasso.errors import AgentLassoError, TooManyRequests, Unavailable
from agentlasso.http.problems import on_http_error, status_of
from agentlasso.web.agreement_pages import AgreementPages
from agentlasso.web.audit_pages import AuditLogPages
from agentlasso.web.case_cards import CaseCardPages
from agentlasso.web.case_editor import CaseEditorPages
from agentlasso.web.compare_pages import ComparePages
from agentlasso.web.flaky_pages import flaky_cases
from agentlasso.web.generation_pages import GenerationPages
from agentlasso.web.import_pages import ImportPages
from agentlasso.web.key_pages import KeyPages
from agentlasso.web.member_pages import MemberPages
from agentlasso.web.page_limits import (
    too_many_requests,
    within_open_page_rate,
    within_page_rate,
)
from agentlasso.web.rendering import PAGE_HEADERS, STATIC_DIR, page, redirect
from agentlasso.web.review_pages import ReviewPages
from agentlasso.web.rule_pages import RulePages
from agentlasso.web.run_live import run_live
from agentlasso.web.run_pages import RunPages
from agentlasso.web.run_start import RunStartPages
from agentlasso.web.server_timing import server_timing
from agentlasso.web.sessions import (
    ForgedRequest,
    SignInRequired,
    check_csrf,
    require_session,
    sign_in_url,
)
from agentlasso.web.set_password import SetPasswordPages
from agentlasso.web.settings_pages import SettingsPages
from agentlasso.web.sign_in import SignInPages, sign_out
from agentlasso.web.sso_pages import SsoPages
from agentlasso.web.static_files import cached_when_current
from agentlasso.web.studio import StudioPages
from agentlasso.web.trace_pages import TracePages
from agentlasso.web.version_pages import VersionPages

log = logging.getLogger("agentlasso.web")
# The multipart framing and the form's other fields around an uploaded file.
UPLOAD_FORM_OVERHEAD = 1024 * 1024
ERROR_IN_PLACE_OF_PAGE = {"hx-retarget": "#main", "hx-reselect": "#main", "hx-reswap": "outerHTML"}


# Every page behind a session (the import, with its larger body limit, has its own router).
SIGNED_IN_PAGES: list[ControllerRouterHandler] = [
    StudioPages,
    VersionPages,
    CaseEditorPages,
    SettingsPages,
    KeyPages,
    MemberPages,
    AuditLogPages,
    RunPages,
    RunStartPages,
    run_live,
    CaseCardPages,
    flaky_cases,
    ComparePages,
    TracePages,
    RulePages,
    GenerationPages,
    ReviewPages,
    AgreementPages,
    sign_out,
]


def web_routers(settings: Settings) -> list[Router]:
    """The pages, the sign-in pages and the static files."""
    signed_in = {
        "guards": [require_session, within_page_rate],
        "before_request": check_csrf,
        "exception_handlers": EXCEPTION_HANDLERS,
        "middleware": [server_timing],
        "include_in_schema": False,
    }
    pages = Router(
        path="/",
        route_handlers=SIGNED_IN_PAGES,
        **signed_in,  # type: ignore[arg-type]
    )
    # An upload is read (and spooled to disk) before any code sees it: only the import may be
    # larger than the app's body limit, and only up to the import's own.
    imports = Router(
        path="/",
        route_handlers=[ImportPages],
        request_max_body_size=settings.max_import_bytes + UPLOAD_FORM_OVERHEAD,
        **signed_in,  # type: ignore[arg-type]
    )
    open_pages = Router(
        path="/",
        route_handlers=[SignInPages, SsoPages, SetPasswordPages],
        guards=[within_open_page_rate],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        include_in_schema=False,
    )
    static = create_static_files_router(
        path="/static",
        directories=[STATIC_DIR],
        cache_control=None,
        include_in_schema=False,
        middleware=[cached_when_current],
    )
    return [pages, imports, open_pages, static]


def _sign_in(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """To sign-in, and from there back to the page (for a form post: the page it was on).

    A live check asked for as the person types (/ui/...) gets nothing instead: navigating away
    then would lose what they typed; the form's own submission leads to sign-in."""
    if request.url.path.startswith("/ui/"):
        return Response(b"", status_code=204)
    if request.method == "GET":
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    else:
        back = _path_of(request.headers.get("hx-current-url"))
    return redirect(request, sign_in_url(back or "/"))


def _path_of(url: str | None) -> str:
    if not url:
        return ""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _error_page(
    request: Request[Any, Any, Any], status: int, title: str, detail: str
) -> Response[Any]:
    response = page(
        request,
        "error.html",
        status_code=status,
        title=title,
        detail=detail,
        back="/datasets",
        back_label="Back to your datasets",
    )
    if request.headers.get("hx-request"):
        # Asked for by htmx to fill part of a page: shown in place of the page's content.
        response.headers.update(ERROR_IN_PLACE_OF_PAGE)
    return response


def _domain_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """One of our errors as a page, with the status the API gives it."""
    assert isinstance(exc, AgentLassoError)
    status = 403 if isinstance(exc, ForgedRequest) else status_of(exc)
    response = _error_page(request, status, exc.title, exc.detail)
    if isinstance(exc, TooManyRequests | Unavailable):
        response.headers["retry-after"] = str(exc.retry_after_s)
    return response


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A fault of ours: its cause in the log, a plain sentence on the page."""
    log.error("Unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    detail = "Something went wrong on our side; the page could not be shown."
    return _error_page(request, 500, "Server error", detail)


def _http_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status >= 500:
        return _unexpected(request, exc)
    titles = {404: "Not found", 405: "Not allowed", 413: "Too large"}
    detail = "There is no such page." if status == 404 else str(exc.detail)
    response = _error_page(request, status, titles.get(status, "Error"), detail)
    response.headers.update({**PAGE_HEADERS, **dict(exc.headers or {})})
    return response


def http_error_anywhere(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """The app's handler of framework errors (a path with no route, say): a page for a
    browser's page request, problem+json for the API."""
    path = request.url.path
    wants_page = "text/html" in request.headers.get("accept", "")
    if path.startswith(("/api/", "/schema", "/health", "/ready")) or not wants_page:
        return on_http_error(request, exc)
    return _http_error(request, exc)


# Litestar picks the handler of the error's nearest class, so every error a page can raise is
# a page here: without them, the API's handlers would answer a page with problem+json.
EXCEPTION_HANDLERS = {
    SignInRequired: _sign_in,
    TooManyRequests: too_many_requests,
    AgentLassoError: _domain_error,
    ValidationException: _http_error,  # the app's own handler of it answers problem+json
    HTTPException: _http_error,
    Exception: _unexpected,
}
