"""The checks a test case carries, declared once: as they travel, are stored and are graded,
and (in each class's `about`) as people are told of them.

A new check type is its class here (with its `about` and `detail`, in the union and CheckType),
its grading function, its line in app/grading/registry.py and its form in
app/web/templates/checks/<type>.html; tests/unit/test_check_types.py fails until all four are
there. The editor, the CLI, the generation prompt and schema follow from them; the generated
docs/reference/checks.md is rewritten by `python -m tests.support.check_reference`, and the
changed generation prompt bumps GENERATION_PROMPT_VERSION (app/generation/prompts.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, get_args

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


class About(NamedTuple):
    """A check type as people are told of it: by the editor, the CLI's pull-request comment,
    the case generation prompt and docs/reference/checks.md, which all read it from here."""

    # The name people know it by (the product's and the contract's).
    name: str
    # When it passes, in one sentence.
    summary: str
    # Its fields as the generation prompt asks for them ("tool", "nothing more", ...).
    asks: str
    # Its fields in an example of it (docs/reference/checks.md); a test decodes it.
    example: Mapping[str, Any]


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
    # Each check class states its own (a test holds every one to it).
    about: ClassVar[About]

    def detail(self) -> str:
        """What the check names, as a list of checks shows it after the product name."""
        raise NotImplementedError(f"{type(self).__name__} does not say how its detail reads")


class ToolCalled(_Check, tag="tool_called", frozen=True):
    about = About(
        name="Tool must be called",
        summary="Passes when a call with exactly this tool name appears.",
        asks="tool",
        example={"tool": "orders.lookup"},
    )
    tool: ToolName

    def detail(self) -> str:
        return self.tool


class ToolNotCalled(_Check, tag="tool_not_called", frozen=True):
    about = About(
        name="Tool must NOT be called",
        summary="Passes when no call with this tool name appears.",
        asks="tool",
        example={"tool": "stripe.refund"},
    )
    tool: ToolName

    def detail(self) -> str:
        return self.tool


class ToolOrder(_Check, tag="tool_order", frozen=True):
    about = About(
        name="Tools called in this order",
        summary="Passes when the tools appear in this order as a subsequence of the calls.",
        asks="tools (in order)",
        example={"tools": ["orders.lookup", "stripe.refund"]},
    )
    tools: Annotated[tuple[ToolName, ...], msgspec.Meta(min_length=1, max_length=100)]

    def detail(self) -> str:
        return " → ".join(self.tools)


class OutputContains(_Check, tag="output_contains", frozen=True):
    about = About(
        name="Output must contain",
        summary="Passes when the text (case-insensitive) or the regular expression appears in "
        "the reply.",
        asks="value (plain text, regex false)",
        example={"value": "refund"},
    )
    value: TextValue
    regex: bool = False

    def detail(self) -> str:
        return f"“{self.value}”"


class OutputNotContains(_Check, tag="output_not_contains", frozen=True):
    about = About(
        name="Forbidden in output",
        summary="Passes when the text or regular expression does not appear in the reply.",
        asks="value (plain text, regex false)",
        example={"value": r"guarantee(d)?", "regex": True, "severity": "minor"},
    )
    value: TextValue
    regex: bool = False

    def detail(self) -> str:
        return f"“{self.value}”"


class OutputValidJson(_Check, tag="output_valid_json", frozen=True):
    about = About(
        name="Output is valid JSON",
        summary="Passes when the reply, whitespace trimmed, parses as JSON.",
        asks="nothing more",
        example={},
    )

    def detail(self) -> str:
        return ""


class LlmJudge(_Check, tag="llm_judge", frozen=True):
    about = About(
        name="AI judge: meets a criterion",
        summary="Passes when the AI judge decides the reply meets the criterion.",
        asks="criterion (one plain-English claim about the reply)",
        example={"criterion": "The reply says when the refund arrives."},
    )
    criterion: Criterion

    def detail(self) -> str:
        return self.criterion


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
# Every check carries an id and a severity.
COMMON_FIELDS = ("id", "severity")


def written_fields(check_class: type[Check]) -> tuple[str, ...]:
    """The fields a check type adds to id and severity, in the order its class declares them."""
    names = (field.name for field in msgspec.structs.fields(check_class))
    return tuple(name for name in names if name not in COMMON_FIELDS)


ABOUT: Mapping[CheckType, About] = {type_of(cls): cls.about for cls in CHECK_CLASSES}
# The names people know the check types by, in the documented order.
PRODUCT_NAMES: dict[CheckType, str] = {name: about.name for name, about in ABOUT.items()}
WRITTEN_FIELDS: Mapping[CheckType, tuple[str, ...]] = {
    type_of(cls): written_fields(cls) for cls in CHECK_CLASSES
}


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
