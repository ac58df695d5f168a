"""Settings -> Audit log: who changed what in the project, newest first, by actor and action."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from litestar import Controller, Request, Response, get

from agentlasso.domain.audit import (
    ACTOR_PATTERN,
    AUDIT_ACTIONS,
    AuditAction,
    AuditEntry,
    AuditFilter,
    CliActor,
    KeyActor,
    SsoActor,
    UserActor,
)
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import decode_cursor, next_cursor
from agentlasso.services import api_keys as key_service
from agentlasso.services import audit as audit_service
from agentlasso.web.rendering import page
from agentlasso.web.sessions import session_of

PAGE_SIZE = 50
_ACTOR = re.compile(ACTOR_PATTERN)
_CURSOR = re.compile(r"^[0-9]{1,18}$")
ACTION_NAMES: dict[AuditAction, str] = {
    "api_key.created": "API key created",
    "api_key.revoked": "API key revoked",
    "agent.created": "Agent registered",
    "agent.changed": "Agent changed",
    "agent.headers_changed": "Agent headers changed",
    "agent.deleted": "Agent deleted",
    "judge_key.set": "Judge key set",
    "judge_key.removed": "Judge key removed",
    "judge_model.changed": "Judge model changed",
    "judge_doubt.changed": "Doubted judge's failures setting changed",
    "dataset.deleted": "Dataset deleted",
    "test_case.deleted": "Test case deleted",
    "trace_retention.changed": "Trace retention changed",
    "trace_rule.created": "Trace rule created",
    "trace_rule.deleted": "Trace rule deleted",
    "alert.created": "Alert created",
    "alert.deleted": "Alert deleted",
    "sign_in.succeeded": "Signed in",
    "sign_in.failed": "Sign-in failed",
    "member.invited": "Member invited",
    "member.role_changed": "Member's role changed",
    "member.removed": "Member removed",
    "member.project_role_changed": "Member's project role changed",
    "user.sso_linked": "Account linked to single sign-on",
}
ACTION_CHOICES = [("", "Any action")] + [(name, ACTION_NAMES[name]) for name in AUDIT_ACTIONS]
_READ_FIRST = {"before": 0, "after": 1}
_ACTIONS: dict[str, AuditAction] = {name: name for name in AUDIT_ACTIONS}


class AuditLogPages(Controller):
    """The project's audit log, read only."""

    @get("/settings/audit-log", name="audit_log")
    async def audit_log(
        self, request: Request[Any, Any, Any], platform: PlatformDep
    ) -> Response[Any]:
        """The log a page at a time, filtered by the actor and action in the URL."""
        project_id = session_of(request).project_id
        query = request.query_params
        chosen = {name: str(query.get(name) or "") for name in ("actor", "action")}
        which = AuditFilter(actor=chosen["actor"] or None, action=_ACTIONS.get(chosen["action"]))
        cursor = str(query.get("cursor") or "")
        entries: list[AuditEntry] = []
        if not chosen["actor"] or _ACTOR.match(chosen["actor"]):
            before = decode_cursor(cursor) if _CURSOR.match(cursor) else None
            entries = await audit_service.list_entries(
                platform, project_id, which, before or None, PAGE_SIZE + 1
            )
        keys = await key_service.list_project_keys(platform, project_id)
        actors = (
            [("", "Any actor")]
            + [
                (key.prefix, f"Key {key.prefix}…" + (" (revoked)" if key.revoked_at else ""))
                for key in keys
            ]
            + [("sign_in_link", "The sign-in link of agentlasso dev"), ("cli", "The command line")]
        )
        if chosen["actor"] and chosen["actor"] not in dict(actors):
            actors.append((chosen["actor"], chosen["actor"]))
        return page(
            request, "audit_log.html", entries=[_row(entry) for entry in entries[:PAGE_SIZE]],
            next_cursor=next_cursor([entry.seq for entry in entries], PAGE_SIZE),
            filters=chosen, filtering=bool(which.actor or which.action),
            filter_query=urlencode({name: value for name, value in chosen.items() if value}),
            choices={"actor": actors, "action": ACTION_CHOICES},
        )  # fmt: skip


def _row(entry: AuditEntry) -> dict[str, Any]:
    """An entry as the table shows it."""
    return {
        "seq": entry.seq,
        "at": entry.at,
        "actor": _actor(entry),
        "action": ACTION_NAMES.get(entry.action, entry.action),
        "action_name": entry.action,
        "object": None if entry.object is None else f"{entry.object.type} {entry.object.id}",
        "ip": entry.ip,
        "changes": [(name, _value(entry.changes[name])) for name in _in_order(entry.changes)],
    }


def _in_order(changes: Mapping[str, object]) -> list[str]:
    """The names of what changed: what it was before it became what it is, then the rest."""
    return sorted(changes, key=lambda name: (_READ_FIRST.get(name, len(_READ_FIRST)), name))


def _actor(entry: AuditEntry) -> str:
    actor = entry.actor
    if isinstance(actor, KeyActor):
        return f"Key {actor.prefix}…"
    if isinstance(actor, CliActor):
        return f"Command line ({actor.command})"
    if isinstance(actor, SsoActor):
        return f"SSO: {actor.email}" if actor.email else "SSO"
    return actor.email if isinstance(actor, UserActor) else "Sign-in link"


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(each) for each in value) or "none"
    return "none" if value is None else str(value)
