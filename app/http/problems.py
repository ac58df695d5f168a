"""Every error rendered as application/problem+json (RFC 9457)."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from agentlasso.domain.field_errors import friendlier, pointer_from_path, with_named_field
from agentlasso.errors import (
    AgentLassoError,
    BeyondScope,
    BodyTooLarge,
    Conflict,
    FieldError,
    InvalidInput,
    MalformedBody,
    NotAuthenticated,
    NotFound,
    TooManyRequests,
    Unavailable,
    UnsupportedMediaType,
)

log = logging.getLogger("agentlasso.api")

PROBLEM_JSON = "application/problem+json"
_STATUS = {
    NotAuthenticated: 401,
    BeyondScope: 403,
    NotFound: 404,
    Conflict: 409,
    MalformedBody: 400,
    InvalidInput: 422,
    BodyTooLarge: 413,
    UnsupportedMediaType: 415,
    TooManyRequests: 429,
    Unavailable: 503,
}


_TITLES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    415: "Unsupported media type",
}


class Problem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The problem+json body."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None


def problem_response(
    status: int,
    title: str,
    detail: str,
    errors: list[FieldError] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[Problem]:
    """A problem+json response."""
    slug = title.lower().replace(" ", "-")
    body = Problem(
        type=f"https://agentlasso.dev/problems/{slug}",
        title=title,
        status=status,
        detail=detail,
        errors=errors,
    )
    headers = dict(headers or {})
    if status == 401:
        headers["www-authenticate"] = "Bearer"
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def status_of(exc: AgentLassoError) -> int:
    """The HTTP status of one of our errors (500 for a kind with none of its own)."""
    return next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 500)


def on_domain_error(_request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    """Our own errors, each with its status."""
    assert isinstance(exc, AgentLassoError)
    status = status_of(exc)
    errors = getattr(exc, "errors", None) or None
    headers = None
    if isinstance(exc, TooManyRequests | Unavailable):
        headers = {"retry-after": str(exc.retry_after_s)}
    return problem_response(status, exc.title, exc.detail, errors, headers)


def on_validation_error(_request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    """Litestar's decoding errors: not JSON is a 400, JSON of the wrong shape a 422."""
    assert isinstance(exc, ValidationException)
    extra = exc.extra if isinstance(exc.extra, list) else []
    if not extra:
        return problem_response(400, MalformedBody.title, _malformed_detail(exc.detail))
    if any(_is_missing_body(item) for item in extra):
        return problem_response(400, MalformedBody.title, "The request body is empty: send JSON.")
    errors = [_field_error(item) for item in extra if isinstance(item, dict)]
    return problem_response(422, "Invalid request", "The request is not valid.", errors)


def _is_missing_body(item: object) -> bool:
    # Litestar reports an empty body as a missing `data` kwarg, not as a JSON error.
    if not isinstance(item, dict) or item.get("key") != "data":
        return False
    return item.get("message") in ("'data'", "Object missing required field `data`")


def _malformed_detail(detail: str) -> str:
    return detail if "JSON" in detail else f"The request body is not valid JSON: {detail}"


def _field_error(item: dict[str, Any]) -> FieldError:
    message = str(item.get("message", "invalid"))
    key = str(item.get("key", ""))
    if item.get("source") in ("query", "path", "header", "cookie"):
        return FieldError(parameter=key, detail=message)
    pointer = "" if key == "data" else pointer_from_path("." + key)
    pointer = with_named_field(pointer, message)
    return FieldError(pointer=pointer or "/", detail=friendlier(message, pointer))


def on_http_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    """Framework errors (no such route, method, body too large) in the same shape."""
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    if status == 413:
        return problem_response(413, BodyTooLarge.title, _too_large_detail(request))
    if status >= 500:
        if "disconnected" in str(exc.detail):
            # The client went away mid-request (a stalled upload closed): nobody to answer.
            log.info("client went away: %s", exc.detail)
        else:
            log.error("HTTP %s: %s", status, exc.detail)
        return problem_response(status, "Server error", "The server could not answer.")
    detail = str(exc.detail)
    if status == 400 and detail.startswith("JSON is malformed"):
        return problem_response(400, MalformedBody.title, detail)
    title = _TITLES.get(status, "Error")
    # A 405 carries the Allow header the framework worked out.
    return problem_response(status, title, detail, headers=dict(exc.headers or {}))


def _too_large_detail(request: Request[Any, Any, Any]) -> str:
    """Name the limit, and what to do about it when the endpoint says (its `too_large_hint`)."""
    handler = request.scope.get("route_handler")
    limit = getattr(handler, "request_max_body_size", None)
    limit = limit if isinstance(limit, int) else request.app.request_max_body_size
    detail = "The request body is too large"
    if isinstance(limit, int):
        detail += f": this endpoint takes at most {limit / 1024 / 1024:g} MiB"
    hint = handler.opt.get("too_large_hint") if handler is not None else None
    return f"{detail}. {hint}" if hint else f"{detail}."


def on_unexpected_error(_request: Request[Any, Any, Any], exc: Exception) -> Response[Problem]:
    """A bug: a generic body for the client, the cause in the log."""
    log.exception("unhandled error", exc_info=exc)
    return problem_response(500, "Server error", "The server hit an unexpected error.")


EXCEPTION_HANDLERS = {
    AgentLassoError: on_domain_error,
    ValidationException: on_validation_error,
    HTTPException: on_http_error,
    Exception: on_unexpected_error,
}
