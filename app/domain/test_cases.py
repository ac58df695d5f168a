"""A test case: the gradable content one revision holds, the live case, and a pinned one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from agentlasso.domain.checks import MAX_CHECKS, Check

EvaluationType = Literal["BOOLEAN", "SCORE"]
Confidence = Annotated[int, msgspec.Meta(ge=0, le=100)]
CaseInput = Annotated[str, msgspec.Meta(max_length=1_000_000)] | dict[str, Any]
# Version 1 is the only one there is; the bound keeps any number within what is stored.
ChecksVersion = Annotated[int, msgspec.Meta(ge=1, le=2_147_483_647)]


class TestCaseContent(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Everything one revision of a test case holds; a run grades exactly this."""

    __test__ = False  # not a pytest class

    input: CaseInput
    checks_version: ChecksVersion = 1
    # None means "no checks list": the case is read from evaluation_criteria_json (4.4).
    checks: tuple[Check, ...] | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType = "SCORE"
    min_confidence: Confidence = 70
    description: str | None = None


class TestCaseImportLine(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of a JSON Lines import: a case, with the camelCase spellings also accepted."""

    __test__ = False

    input: CaseInput
    checks_version: ChecksVersion = 1
    checks: Annotated[tuple[Check, ...], msgspec.Meta(max_length=MAX_CHECKS)] | None = None
    evaluation_criteria_json: dict[str, Any] | None = None
    expected_output: str | None = None
    evaluation_type: EvaluationType | None = None
    min_confidence: Confidence | None = None
    description: str | None = None
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
            checks_version=self.checks_version,
            checks=self.checks,
            evaluation_criteria_json=_first(
                self.evaluation_criteria_json, self.evaluation_criteria_camel
            ),
            expected_output=_first(self.expected_output, self.expected_output_camel),
            evaluation_type=_first(self.evaluation_type, self.evaluation_type_camel, "SCORE"),
            min_confidence=_first(self.min_confidence, self.min_confidence_camel, 70),
            description=self.description,
        )


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
