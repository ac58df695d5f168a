"""Pages and fragments from Jinja2 templates, with the headers every page carries."""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from litestar import Request, Response
from litestar.enums import MediaType

STATIC_DIR = Path(str(resources.files("agentlasso.web") / "static"))
HTMX = "vendor/htmx-2.0.11.min.js"

# Same-origin everything: no inline script, no other host. htmx runs under it (its indicator
# styles are off, see base.html) and never evaluates code.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    # frame-ancestors' twin for browsers that predate CSP 2: no page is ever framed.
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    # Pages show a project's data: never kept by a shared cache or the back button's cache.
    "cache-control": "no-store",
}


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("agentlasso.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Templates are package data: they change with a new release, not under a running one.
        auto_reload=False,
    )
    environment.globals["static"] = static_url
    environment.globals["HTMX"] = HTMX
    environment.filters["when"] = when
    environment.filters["percent"] = percent
    environment.filters["pretty_json"] = pretty_json
    return environment


def render(template: str, **context: Any) -> str:
    """A template rendered with its context."""
    return _environment().get_template(template).render(**context)


def page(
    request: Request[Any, Any, Any], template: str, status_code: int = 200, **context: Any
) -> Response[str]:
    """A whole page (an htmx request may select part of it)."""
    context.setdefault("session", getattr(request.state, "session", None))
    context.setdefault("path", request.url.path)
    return Response(
        render(template, **context),
        status_code=status_code,
        media_type=MediaType.HTML,
        headers=PAGE_HEADERS,
    )


def redirect(request: Request[Any, Any, Any], location: str) -> Response[str]:
    """Go to `location` after a form: a 303, or for htmx a full navigation (HX-Redirect)."""
    if request.headers.get("hx-request"):
        return Response("", status_code=200, headers={**PAGE_HEADERS, "hx-redirect": location})
    return Response("", status_code=303, headers={**PAGE_HEADERS, "location": location})


def download_disposition(name: str, suffix: str) -> str:
    """A Content-Disposition saving the download as `name` (ASCII for every browser, and the
    name itself as RFC 6266's UTF-8 `filename*`): a header holds Latin-1 only."""
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in name)[:60]
    exact = quote(f"{name[:60]}{suffix}", safe="", errors="replace")
    return f"attachment; filename=\"{plain or 'download'}{suffix}\"; filename*=UTF-8''{exact}"


@functools.cache
def static_url(name: str) -> str:
    """The URL of a static file, with its content's hash: cached for a year, never stale."""
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:12]
    return f"/static/{name}?v={digest}"


def when(moment: datetime | None) -> str:
    """A moment as people read it, in UTC."""
    if moment is None:
        return "never"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def percent(rate: float | None) -> str:
    """A pass rate as a percentage; "n/a" when nothing was graded."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def pretty_json(value: Any) -> str:
    """JSON as a person reads it."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
