"""Test cases on the wire: writing one, and a case at its current revision."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from agentlasso.domain.checks import Check, WrittenChecks
from agentlasso.domain.conversations import Conversation
from agentlasso.domain.test_cases import (
    CaseInput,
    ChecksVersion,
    Confidence,
    ContentWarning,
    EvaluationType,
    Tags,
    TestCaseContent,
)
from agentlasso.domain.tool_fixtures import ToolFixtures


class TestCaseCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A new test case."""

    __test__ = False

    # A single-turn case's input, or a conversation's turns (contract section 13): one of them.
    input: CaseInput | None = None
    conversation: Conversation | None = None
    checks_version: ChecksVersion = 1
    checks: WrittenChecks | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType = "SCORE"
    min_confidence: Confidence = 70
    description: str | None = None
    # At most 20, each 1-64 characters without whitespace or comma; a repeat is folded.
    tags: Tags = ()
    # Per tool, the answers the agent may give its calls in a test (contract section 14).
    tool_fixtures: ToolFixtures | None = None

    def content(self) -> TestCaseContent:
        """The content to store."""
        fields = msgspec.structs.asdict(self)
        checks = fields.pop("checks")
        return TestCaseContent(**fields, checks=None if checks is None else tuple(checks))


class TestCaseUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Fields to change; absent ones are kept. Any change makes a new revision."""

    __test__ = False

    input: CaseInput | msgspec.UnsetType | None = msgspec.UNSET
    conversation: Conversation | msgspec.UnsetType | None = msgspec.UNSET
    checks_version: ChecksVersion | msgspec.UnsetType = msgspec.UNSET
    checks: WrittenChecks | msgspec.UnsetType | None = msgspec.UNSET
    evaluation_criteria_json: dict[str, Any] | msgspec.UnsetType | None = msgspec.UNSET
    expected_output: str | msgspec.UnsetType | None = msgspec.UNSET
    evaluation_type: EvaluationType | msgspec.UnsetType = msgspec.UNSET
    min_confidence: Confidence | msgspec.UnsetType = msgspec.UNSET
    description: str | msgspec.UnsetType | None = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET
    tool_fixtures: ToolFixtures | msgspec.UnsetType | None = msgspec.UNSET

    def apply(self, current: TestCaseContent) -> TestCaseContent:
        """The current content with these changes."""
        return with_edits(current, self)


def with_edits(current: TestCaseContent, edits: msgspec.Struct) -> TestCaseContent:
    """The content with every field the edits set (absent ones, UNSET, are kept)."""
    changes = {
        name: value
        for name in edits.__struct_fields__
        if (value := getattr(edits, name)) is not msgspec.UNSET
    }
    if isinstance(changes.get("checks"), list):
        changes["checks"] = tuple(changes["checks"])
    return msgspec.structs.replace(current, **changes)


class TestCase(msgspec.Struct, kw_only=True):
    """A test case at its current revision."""

    __test__ = False

    id: str
    dataset_id: str
    revision: int
    # Null for a conversation case, which has `conversation` instead.
    input: CaseInput | None
    checks_version: int
    checks: tuple[Check, ...] | None
    evaluation_criteria_json: dict[str, Any] | None
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    description: str | None
    tags: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    # The trace it was made from (`POST /traces/{trace_id}/test-case`), else null.
    source_trace_id: str | None = None
    conversation: Conversation | msgspec.UnsetType = msgspec.UNSET
    # Left out when the case has none.
    tool_fixtures: ToolFixtures | msgspec.UnsetType = msgspec.UNSET
    # Only on writes: regular expressions that will fail when graded.
    warnings: list[ContentWarning] | msgspec.UnsetType = msgspec.UNSET


class TestCasePage(msgspec.Struct, kw_only=True):
    """A page of test cases."""

    __test__ = False

    items: list[TestCase]
    next_cursor: str | None


class ImportResult(msgspec.Struct):
    """How many cases an import stored."""

    imported: int
