"""What the web app keeps besides the API's objects: sessions, keys as listed, case filters."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.accounts import Role
from agentlasso.domain.audit import Actor
from agentlasso.domain.checks import CheckType, Severity
from agentlasso.domain.datasets import Dataset
from agentlasso.domain.runs import RunStatus
from agentlasso.domain.scopes import Scope
from agentlasso.domain.test_cases import TestCaseContent


class WebSession(msgspec.Struct, frozen=True, kw_only=True):
    """A signed-in browser: its project, the user (None when opened with a key), the token its
    forms must carry, and who it acts as."""

    project_id: UUID
    csrf_token: str
    # The scope of the key it was opened with (`admin` for a one-time link's).
    scope: Scope
    # The key it was opened with, the user, or the one-time link: the audit log's actor.
    actor: Actor
    user_id: UUID | None = None
    # The user's role in the project (None for a session opened with a key or a project link).
    role: Role | None = None
    # The user's role in the project's organisation, which changes to the members are held to.
    organisation_role: Role | None = None


class ApiKeyInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A key as Settings lists it: never the key, only its first characters."""

    id: UUID
    prefix: str
    scope: Scope
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class LastRun(msgspec.Struct, frozen=True, kw_only=True):
    """The newest run of a dataset, as its listing shows it."""

    id: UUID
    status: RunStatus
    pass_rate: float | None
    ci_pass: bool
    created_at: datetime


class DatasetSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset with its newest run."""

    dataset: Dataset
    last_run: LastRun | None


class CaseFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which of a dataset's cases a page lists; None is "any"."""

    text: str | None = None
    check_type: CheckType | None = None
    severity: Severity | None = None
    # True: cases the AI judge grades (a judge check or an expected output); False: the rest.
    judged: bool | None = None
    # Cases that failed in the dataset's newest run (that run's id, found by the service).
    failed_in_run: UUID | None = None
    # Cases with this tag (compared exactly).
    tag: str | None = None


class Revision(msgspec.Struct, frozen=True, kw_only=True):
    """One saved version of a case."""

    revision: int
    content: TestCaseContent
    created_at: datetime


class ResultFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which of a run's results a page lists; None is "any"."""

    outcome: Literal["passed", "failed", "not_graded"] | None = None
    # A failed check of this type and/or severity (the same check has both, when both given).
    check_type: CheckType | None = None
    severity: Severity | None = None
    partially_graded: bool = False
    # Words in the input or description of the revision that was graded.
    text: str | None = None

    @property
    def narrows(self) -> bool:
        """True when more than the outcome is asked for: matches may be sparse."""
        return bool(self.check_type or self.severity or self.partially_graded or self.text)


class ResultRow(msgspec.Struct, frozen=True, kw_only=True):
    """One result as a run's results table shows it."""

    seq: int
    test_case_id: UUID
    trial: int
    outcome: Literal["passed", "failed", "not_graded"]
    partially_graded: bool
    agent_error: str | None
    failed_check_types: list[CheckType]
    # The graded revision's input (cut short) and description; None when the case is deleted.
    input: str | None
    description: str | None


class CaseNow(msgspec.Struct, frozen=True, kw_only=True):
    """The dataset's data context as it is now (it has no revisions), and the case's current
    revision number (None: the case has been deleted since the run)."""

    data_context: dict[str, Any] | None
    current_revision: int | None
