"""The one tree of domain errors (app/api maps each to a problem+json status).

It imports nothing of the domain: the domain's modules raise these. How a msgspec validation
error names its field is agentlasso.domain.field_errors.
"""

from __future__ import annotations

import msgspec


class FieldError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One bad field: a JSON pointer into the body (or a query parameter) and what is wrong."""

    detail: str
    pointer: str | None = None
    parameter: str | None = None
    header: str | None = None
    # For JSON Lines bodies: the 1-based line the pointer is relative to; for other files, the
    # line where the bad part starts, when known.
    line: int | None = None
    # For imports from other tools: the 1-based source item (a promptfoo test, a CSV row).
    item: int | None = None


class AgentLassoError(Exception):
    """Base of every error this application raises on purpose."""

    title = "Error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotAuthenticated(AgentLassoError):
    """No API key, an unknown one, or a revoked one."""

    title = "Not authenticated"


class BeyondScope(AgentLassoError):
    """A live key (or a session opened with one) asking for more than its scope allows."""

    title = "Beyond the key's scope"


class BeyondRole(BeyondScope):
    """A signed-in user asking for more than their role allows (a 403, as a key's scope)."""

    title = "Beyond your role"


class NotFound(AgentLassoError):
    """The object does not exist in the caller's project (or at all: we do not say which).

    When the body named it (a run's dataset_id, say), `errors` points at where.
    """

    title = "Not found"

    def __init__(self, detail: str, errors: list[FieldError] | None = None) -> None:
        super().__init__(detail)
        self.errors = errors or []


class Conflict(AgentLassoError):
    """The request contradicts the object's current state."""

    title = "Conflict"


class StaleRevision(Conflict):
    """A change written against a revision that is no longer the current one."""

    def __init__(self, detail: str, current_revision: int) -> None:
        super().__init__(detail)
        self.current_revision = current_revision


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


class UnsupportedMediaType(AgentLassoError):
    """The body is in a format the endpoint does not read; `errors` names the header."""

    title = "Unsupported media type"

    def __init__(self, detail: str, header: str = "content-type") -> None:
        super().__init__(detail)
        self.errors = [FieldError(header=header, detail=detail)]


class Unavailable(AgentLassoError):
    """The server cannot take this request now (busy, or a dependency away); try again soon."""

    title = "Service unavailable"

    def __init__(self, detail: str, retry_after_s: int = 1) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


class TooManyRequests(AgentLassoError):
    """A rate limit or a quota of the caller's: try again after `retry_after_s`."""

    title = "Too many requests"

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s
