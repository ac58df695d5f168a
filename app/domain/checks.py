"""The checks a test case carries, declared once: as they travel, are stored and are graded."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

Severity = Literal["critical", "minor"]
CheckType = Literal[
    "tool_called",
    "tool_not_called",
    "tool_order",
    "output_contains",
    "output_not_contains",
    "output_valid_json",
    "llm_judge",
]

CheckId = Annotated[
    str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
]
ToolName = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
TextValue = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
Criterion = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]


class _Check(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag_field="type",
    gc=False,
):
    # `id` is None only until `assign_check_ids` runs at write time; stored checks always have one.
    id: CheckId | None = None
    severity: Severity = "critical"


class ToolCalled(_Check, tag="tool_called", frozen=True):
    """Passes when a call with exactly this tool name appears."""

    tool: ToolName


class ToolNotCalled(_Check, tag="tool_not_called", frozen=True):
    """Passes when no call with this tool name appears."""

    tool: ToolName


class ToolOrder(_Check, tag="tool_order", frozen=True):
    """Passes when the tools appear in this order as a subsequence of the calls."""

    tools: Annotated[tuple[ToolName, ...], msgspec.Meta(min_length=1, max_length=100)]


class OutputContains(_Check, tag="output_contains", frozen=True):
    """Passes when the text (case-insensitive) or the regular expression appears in the reply."""

    value: TextValue
    regex: bool = False


class OutputNotContains(_Check, tag="output_not_contains", frozen=True):
    """Passes when the text or regular expression does not appear in the reply."""

    value: TextValue
    regex: bool = False


class OutputValidJson(_Check, tag="output_valid_json", frozen=True):
    """Passes when the reply, whitespace trimmed, parses as JSON."""


class LlmJudge(_Check, tag="llm_judge", frozen=True):
    """Passes when the AI judge decides the reply meets the criterion."""

    criterion: Criterion


Check = (
    ToolCalled
    | ToolNotCalled
    | ToolOrder
    | OutputContains
    | OutputNotContains
    | OutputValidJson
    | LlmJudge
)

# Checks a case may be written with: enough for any rubric, few enough that grading one case
# stays cheap (each regular expression costs a search of the reply).
MAX_CHECKS = 100
# A case's checks as a client writes them.
WrittenChecks = Annotated[list[Check], msgspec.Meta(max_length=MAX_CHECKS)]

# Every check type, in the order they are documented: the classes of the union above.
CHECK_CLASSES: tuple[type[Check], ...] = get_args(Check)


def type_of(check_class: type[Check]) -> CheckType:
    """A check class's wire name, its `type` tag."""
    tag: CheckType = check_class.__struct_config__.tag  # type: ignore[assignment]
    return tag


CHECK_TYPES: tuple[CheckType, ...] = tuple(type_of(cls) for cls in CHECK_CLASSES)
# CheckType spells the same names for the type checker; it must not drift from the classes.
if get_args(CheckType) != CHECK_TYPES:
    raise ImportError(f"CheckType {get_args(CheckType)} does not match the check classes")


def duplicate_check_ids(checks: tuple[Check, ...]) -> list[int]:
    """Indexes of checks whose explicit id repeats an earlier one."""
    seen: set[str] = set()
    duplicates: list[int] = []
    for index, check in enumerate(checks):
        if check.id is None:
            continue
        if check.id in seen:
            duplicates.append(index)
        seen.add(check.id)
    return duplicates


def assign_check_ids(checks: tuple[Check, ...]) -> tuple[Check, ...]:
    """Give every check without an id the next free `c1, c2, ...`; explicit ids are kept."""
    taken = {check.id for check in checks if check.id is not None}
    counter = 0
    assigned: list[Check] = []
    for check in checks:
        if check.id is None:
            counter += 1
            while f"c{counter}" in taken:
                counter += 1
            check = msgspec.structs.replace(check, id=f"c{counter}")
        assigned.append(check)
    return tuple(assigned)
