"""/api/v1/audit-log: who changed what in the project, newest first. Nothing edits it."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import FromQuery, QueryParameter

from agentlasso.domain.audit import ACTOR_PATTERN, AuditAction, AuditFilter
from agentlasso.http.auth import PlatformDep, ProjectId
from agentlasso.http.pagination import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, next_cursor
from agentlasso.schemas.audit_log import AuditLogPage, entry_out
from agentlasso.services import audit as service

ActorFilter = Annotated[
    str | None,
    QueryParameter(
        pattern=ACTOR_PATTERN,
        description="Only entries by this actor: a key's prefix (`al_` and 8 characters), "
        "a person's email, `sign_in_link` or `cli`.",
    ),
]


class AuditLogController(Controller):
    """The project's audit log: read only."""

    path = "/audit-log"
    tags = ("audit log",)

    @get(operation_id="listAuditLog")
    async def list(
        self,
        platform: PlatformDep,
        project_id: ProjectId,
        actor: ActorFilter = None,
        action: FromQuery[AuditAction | None] = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> AuditLogPage:
        """The project's audit log, newest first, optionally by one actor or of one action."""
        which = AuditFilter(actor=actor, action=action)
        before = decode_cursor(cursor) or None
        entries = await service.list_entries(platform, project_id, which, before, limit + 1)
        return AuditLogPage(
            items=[entry_out(entry) for entry in entries[:limit]],
            next_cursor=next_cursor([entry.seq for entry in entries], limit),
        )
