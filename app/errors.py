"""The one tree of domain errors; app/api maps each to a problem+json status."""

from __future__ import annotations

import msgspec


class FieldError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One bad field: a JSON pointer into the body (or a query parameter) and what is wrong."""

    detail: str
    pointer: str | None = None
    parameter: str | None = None
    # For JSON Lines bodies: the 1-based line the pointer is relative to.
    line: int | None = None


class AgentLassoError(Exception):
    """Base of every error this application raises on purpose."""

    title = "Error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotAuthenticated(AgentLassoError):
    """No API key, an unknown one, or a revoked one."""

    title = "Not authenticated"


class NotFound(AgentLassoError):
    """The object does not exist in the caller's project (or at all: we do not say which)."""

    title = "Not found"


class Conflict(AgentLassoError):
    """The request contradicts the object's current state."""

    title = "Conflict"


class MalformedBody(AgentLassoError):
    """The body is not JSON (or not JSON Lines) at all."""

    title = "Malformed request body"


class InvalidInput(AgentLassoError):
    """The body is JSON of the wrong shape; `errors` names each bad field."""

    title = "Invalid request"

    def __init__(self, detail: str, errors: list[FieldError]) -> None:
        super().__init__(detail)
        self.errors = errors


class BodyTooLarge(AgentLassoError):
    """The body is over the endpoint's size limit."""

    title = "Request body too large"
