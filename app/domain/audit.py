"""The audit log: who did what to which object of a project, chained so tampering shows.

An entry's actor is a tagged shape (`kind`), so people and organisations can join the keys and
links that act today without changing what is stored. An entry's hash covers its canonical
content and the previous entry's hash: editing, removing or reordering an entry breaks the
chain at that entry (verify_chain says where).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Literal
from uuid import UUID

import msgspec

# What the log records, by name; a filter for any other action is refused.
AuditAction = Literal[
    "api_key.created",
    "api_key.revoked",
    "agent.created",
    "agent.changed",
    "agent.headers_changed",
    "agent.deleted",
    "judge_key.set",
    "judge_key.removed",
    "judge_model.changed",
    "judge_doubt.changed",
    "dataset.deleted",
    "test_case.deleted",
    "trace_retention.changed",
    "trace_rule.created",
    "trace_rule.deleted",
    "alert.created",
    "alert.deleted",
    "sign_in.succeeded",
    "sign_in.failed",
    "member.invited",
    "member.role_changed",
    "member.removed",
    "member.project_role_changed",
    "user.sso_linked",
]
AUDIT_ACTIONS: tuple[AuditAction, ...] = AuditAction.__args__  # type: ignore[attr-defined]
# What the `actor` filter takes: a key's prefix, a person's email, an actor's kind.
ACTOR_PATTERN = r"^[!-~]{1,320}$"
# What `changes` may hold: names and small values, never a secret (the services choose).
ChangeValue = str | int | bool | None | list[str]
# The hash before a project's first entry.
GENESIS_HASH = bytes(32)


class KeyActor(msgspec.Struct, frozen=True, kw_only=True, tag="api_key", tag_field="kind"):
    """A project API key (over the API, or the web session opened with it)."""

    id: UUID
    prefix: str


class LinkActor(msgspec.Struct, frozen=True, kw_only=True, tag="sign_in_link", tag_field="kind"):
    """A web session opened with the one-time link `agentlasso dev` prints."""


class CliActor(msgspec.Struct, frozen=True, kw_only=True, tag="cli", tag_field="kind"):
    """Someone at the server's command line, holding the database's URL."""

    command: str


class UserActor(msgspec.Struct, frozen=True, kw_only=True, tag="user", tag_field="kind"):
    """A person signed in to the web app (with their password, or a link that names them)."""

    id: UUID
    email: str


class SsoActor(msgspec.Struct, frozen=True, kw_only=True, tag="sso", tag_field="kind"):
    """Someone the identity provider vouched for whom single sign-on refused: the email the
    provider gave, when it gave one (no user has it as theirs yet, or not this way)."""

    email: str | None = None


Actor = KeyActor | LinkActor | CliActor | UserActor | SsoActor


def actor_label(actor: Actor) -> str:
    """What the `actor` filter matches: a key's prefix, a person's email, else the actor's kind."""
    if isinstance(actor, KeyActor):
        return actor.prefix
    if isinstance(actor, UserActor):
        return actor.email
    if isinstance(actor, SsoActor):
        return actor.email or "sso"
    return "sign_in_link" if isinstance(actor, LinkActor) else "cli"


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    """Who is asking for a change, and from which address (None: not over the network)."""

    actor: Actor
    ip: str | None = None


class AuditObject(msgspec.Struct, frozen=True, kw_only=True):
    """What an entry is about."""

    type: str
    id: str


class AuditEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An entry as a service records it: the action, its object, and what changed."""

    action: AuditAction
    object: AuditObject | None = None
    changes: dict[str, ChangeValue] = {}


class AuditEntry(msgspec.Struct, frozen=True, kw_only=True):
    """An entry as stored: its place in the project's chain, when, who, what, and its hash."""

    project_id: UUID
    seq: int
    at: datetime
    actor: Actor
    action: AuditAction
    object: AuditObject | None
    ip: str | None
    changes: dict[str, ChangeValue]
    prev_hash: bytes
    entry_hash: bytes


class AuditFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which entries a listing shows; None is "any"."""

    actor: str | None = None
    action: AuditAction | None = None


class BrokenLink(msgspec.Struct, frozen=True, kw_only=True):
    """The first entry of a project's chain that does not hold, and why."""

    seq: int
    reason: str


_canonical = msgspec.json.Encoder(order="sorted")


def canonical_content(entry: AuditEntry) -> bytes:
    """The bytes an entry's hash covers: every field but the hashes, keys sorted."""
    content = {
        "project_id": str(entry.project_id),
        "seq": entry.seq,
        "at": entry.at.astimezone(UTC).isoformat(),
        "actor": msgspec.to_builtins(entry.actor),
        "action": entry.action,
        "object": msgspec.to_builtins(entry.object),
        "ip": entry.ip,
        "changes": entry.changes,
    }
    return _canonical.encode(content)


def entry_hash(prev_hash: bytes, entry: AuditEntry) -> bytes:
    """SHA-256 of the previous entry's hash and this entry's canonical content."""
    return hashlib.sha256(prev_hash + canonical_content(entry)).digest()


def follow_chain(
    entries: list[AuditEntry], after: AuditEntry | None
) -> tuple[AuditEntry | None, BrokenLink | None]:
    """Follow these entries (in seq order, after `after`): the last one that holds, and the
    first one that breaks the chain, if any."""
    held = after
    for entry in entries:
        broken = _broken_link(held, entry)
        if broken is not None:
            return held, broken
        held = entry
    return held, None


def _broken_link(before: AuditEntry | None, entry: AuditEntry) -> BrokenLink | None:
    prev_seq, prev_hash = (0, GENESIS_HASH) if before is None else (before.seq, before.entry_hash)
    if entry.seq != prev_seq + 1:
        return BrokenLink(seq=entry.seq, reason=_missing(prev_seq + 1, entry.seq - 1))
    if entry.prev_hash != prev_hash:
        return BrokenLink(seq=entry.seq, reason="it does not follow the entry before it")
    if entry_hash(prev_hash, entry) != entry.entry_hash:
        return BrokenLink(seq=entry.seq, reason="its content is not what was recorded")
    return None


def _missing(first: int, last: int) -> str:
    return (
        f"entry {first} is missing" if first == last else f"entries {first} to {last} are missing"
    )
