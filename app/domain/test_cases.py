"""A test case: the gradable content one revision holds, the live case, and a pinned one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.checks import MAX_CHECKS, Check, assign_check_ids
from agentlasso.domain.conversations import Conversation, ScriptedTurn
from agentlasso.domain.tool_fixtures import ToolFixtures

EvaluationType = Literal["BOOLEAN", "SCORE"]
Confidence = Annotated[int, msgspec.Meta(ge=0, le=100)]
CaseInput = Annotated[str, msgspec.Meta(max_length=1_000_000)] | dict[str, Any]
# Version 1 is the only one there is; the bound keeps any number within what is stored.
ChecksVersion = Annotated[int, msgspec.Meta(ge=1, le=2_147_483_647)]
# A tag names a slice of a dataset (`smoke`, `billing`) that a run may be limited to. No
# whitespace or comma: a CSV cell and the case editor's field list tags comma-separated.
MAX_TAGS = 20
MAX_TAG_CHARS = 64
TAG_PATTERN = r"^[^\s,\x00-\x1f\x7f]+$"
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TAG_CHARS, pattern=TAG_PATTERN)]
Tags = Annotated[tuple[Tag, ...], msgspec.Meta(max_length=MAX_TAGS)]
TAG_RULE = (
    f"A case has at most {MAX_TAGS} tags, each 1 to {MAX_TAG_CHARS} characters "
    "with no whitespace or comma."
)


class TestCaseContent(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Everything one revision of a test case holds; a run grades exactly this."""

    __test__ = False  # not a pytest class

    # A single-turn case has `input`; a conversation case has `conversation` (never both).
    input: CaseInput | None = None
    conversation: Conversation | None = None
    checks_version: ChecksVersion = 1
    # None means "no checks list": the case is read from evaluation_criteria_json (4.4).
    checks: tuple[Check, ...] | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType = "SCORE"
    min_confidence: Confidence = 70
    description: str | None = None
    # Kept in order, each once (a repeated tag is folded into its first: fold_tags).
    tags: Tags = ()
    # Answers for the agent's tools, sent with each call (section 14); never graded.
    tool_fixtures: ToolFixtures | None = None


class TestCaseImportLine(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of a JSON Lines import: a case, with the camelCase spellings also accepted."""

    __test__ = False

    input: CaseInput | None = None
    conversation: Conversation | None = None
    checks_version: ChecksVersion = 1
    checks: Annotated[tuple[Check, ...], msgspec.Meta(max_length=MAX_CHECKS)] | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType | None = None
    min_confidence: Confidence | None = None
    description: str | None = None
    tags: Tags = ()
    tool_fixtures: ToolFixtures | None = None
    expected_output_camel: str | None = msgspec.field(default=None, name="expectedOutput")
    evaluation_type_camel: EvaluationType | None = msgspec.field(
        default=None, name="evaluationType"
    )
    min_confidence_camel: Confidence | None = msgspec.field(default=None, name="minConfidence")
    evaluation_criteria_camel: dict[str, Any] | None = msgspec.field(
        default=None, name="evaluationCriteriaJson"
    )

    def spelled_twice(self) -> list[str]:
        """Fields given in both spellings (ambiguous, so refused)."""
        pairs = [
            ("expected_output", self.expected_output, self.expected_output_camel),
            ("evaluation_type", self.evaluation_type, self.evaluation_type_camel),
            ("min_confidence", self.min_confidence, self.min_confidence_camel),
            (
                "evaluation_criteria_json",
                self.evaluation_criteria_json,
                self.evaluation_criteria_camel,
            ),
        ]
        return [name for name, snake, camel in pairs if snake is not None and camel is not None]

    def content(self) -> TestCaseContent:
        """The case this line describes, whichever spelling it used."""
        return TestCaseContent(
            input=self.input,
            conversation=self.conversation,
            checks_version=self.checks_version,
            checks=self.checks,
            evaluation_criteria_json=_first(
                self.evaluation_criteria_json, self.evaluation_criteria_camel
            ),
            expected_output=_first(self.expected_output, self.expected_output_camel),
            evaluation_type=_first(self.evaluation_type, self.evaluation_type_camel, "SCORE"),
            min_confidence=_first(self.min_confidence, self.min_confidence_camel, 70),
            description=self.description,
            tags=self.tags,
            tool_fixtures=self.tool_fixtures,
        )


def fold_tags(tags: tuple[str, ...]) -> tuple[str, ...]:
    """The tags in their order, each once (tags are compared exactly, case included)."""
    return tuple(dict.fromkeys(tags))


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


class TestCase(msgspec.Struct, frozen=True, kw_only=True):
    """A live test case at its current revision."""

    __test__ = False

    id: UUID
    dataset_id: UUID
    seq: int
    revision: int
    content: TestCaseContent
    created_at: datetime
    updated_at: datetime
    # The trace it was made from, when it was.
    source_trace_id: str | None = None


class PinnedCase(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A case as a run holds it: the revision pinned when the run was created."""

    # 1-based, in dataset order when the run was created.
    position: int
    test_case_id: UUID
    revision_id: UUID
    content: TestCaseContent


class ContentWarning(msgspec.Struct, frozen=True):
    """Something accepted that will not work as the author probably meant."""

    check_id: str
    pointer: str
    detail: str


def with_conversation_ids(content: TestCaseContent) -> TestCaseContent:
    """A conversation case with an id on every check, unique in the whole case: its turns'
    checks in order, then its own (explicit ids are kept)."""
    conversation = content.conversation
    assert conversation is not None, "only a conversation case has turns to number"
    own = content.checks or ()
    flat = assign_check_ids(tuple(check for _, check in conversation.turn_checks()) + own)
    turns: list[ScriptedTurn] = []
    start = 0
    for turn in conversation.turns:
        end = start + len(turn.checks)
        turns.append(msgspec.structs.replace(turn, checks=flat[start:end]))
        start = end
    numbered = msgspec.structs.replace(conversation, turns=tuple(turns))
    checks = None if content.checks is None else flat[start:]
    return msgspec.structs.replace(content, conversation=numbered, checks=checks)
