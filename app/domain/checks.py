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

from agentlasso.domain.tool_arguments import (
    ArgumentsMatch,
    ExpectedArguments,
    ToolName,
    ToolStep,
)

Severity = Literal["critical", "minor"]
CheckType = Literal[
    "tool_called",
    "tool_not_called",
    "tool_order",
    "max_tool_calls",
    "tool_args_valid",
    "output_contains",
    "output_not_contains",
    "output_equals",
    "output_valid_json",
    "output_matches_schema",
    "latency_below",
    "llm_judge",
]

CheckId = Annotated[
    str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
]
TextValue = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
Criterion = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
# The reply an output_equals check expects: empty is a value (an agent that must say nothing).
ExpectedText = Annotated[str, msgspec.Meta(max_length=10_000)]
# A JSON Schema as written; its size (64 KiB) and soundness are checked at write time.
JsonSchema = dict[str, Any]


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
        summary="Passes when a call with exactly this tool name appears (with these arguments, "
        "when the check lists them).",
        # Generated cases name tools only: arguments are for a person who knows them.
        asks="tool",
        example={"tool": "stripe.refund", "arguments": {"amount": 42}},
    )
    tool: ToolName
    # Left out, the name alone decides, as the product documents (arguments are opt-in); a
    # field left out is left out of the check as it is read back, too.
    arguments: ExpectedArguments | msgspec.UnsetType = msgspec.UNSET
    arguments_match: ArgumentsMatch | msgspec.UnsetType = msgspec.UNSET

    def detail(self) -> str:
        if self.arguments is msgspec.UNSET:
            return self.tool
        return f"{self.tool} {_compact(self.arguments)}"


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
    # A name, or a name with the arguments that call must have.
    tools: Annotated[tuple[ToolName | ToolStep, ...], msgspec.Meta(min_length=1, max_length=100)]
    # How the entries that list arguments compare them (left out: subset).
    arguments_match: ArgumentsMatch | msgspec.UnsetType = msgspec.UNSET

    def detail(self) -> str:
        return " → ".join(
            step if isinstance(step, str) else f"{step.tool} {_compact(step.arguments)}"
            for step in self.tools
        )

    def step_names(self) -> tuple[str, ...]:
        """The tools in order, by name."""
        return tuple(step if isinstance(step, str) else step.tool for step in self.tools)


class MaxToolCalls(_Check, tag="max_tool_calls", frozen=True):
    about = About(
        name="At most N tool calls",
        summary="Passes when the agent made at most this many tool calls (of this tool, when "
        "one is named).",
        asks="count, and tool only to count one tool's calls",
        example={"count": 3},
    )
    count: Annotated[int, msgspec.Meta(ge=0, le=10_000)]
    # Left out: every tool's calls count.
    tool: ToolName | msgspec.UnsetType = msgspec.UNSET

    def detail(self) -> str:
        return f"{self.count}" if self.tool is msgspec.UNSET else f"{self.count} × {self.tool}"


class ToolArgsValid(_Check, tag="tool_args_valid", frozen=True):
    about = About(
        name="Tool arguments are valid",
        summary="Passes when every call (of this tool, when one is named) has arguments that "
        "validate against that tool's input_schema among the agent's declared tools.",
        asks="tool only to check one tool's calls",
        example={"tool": "stripe.refund"},
    )
    # Left out: every call is checked.
    tool: ToolName | msgspec.UnsetType = msgspec.UNSET

    def detail(self) -> str:
        return "every tool" if self.tool is msgspec.UNSET else self.tool


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


class OutputEquals(_Check, tag="output_equals", frozen=True):
    about = About(
        name="Output equals",
        summary="Passes when the reply equals the value (by default ignoring case and the "
        "whitespace around it).",
        asks="value, ignore_case (default true) and trim (default true)",
        example={"value": "42"},
    )
    value: ExpectedText
    ignore_case: bool = True
    trim: bool = True

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


class OutputMatchesSchema(_Check, tag="output_matches_schema", frozen=True):
    about = About(
        name="Output matches a JSON Schema",
        summary="Passes when the reply parses as JSON and validates against the JSON Schema "
        "(draft 2020-12).",
        asks="schema (a JSON Schema object)",
        example={
            "schema": {
                "type": "object",
                "required": ["order_id", "refund"],
                "properties": {"order_id": {"type": "string"}, "refund": {"type": "boolean"}},
            }
        },
    )
    schema: JsonSchema

    def detail(self) -> str:
        title = self.schema.get("title")
        return title if isinstance(title, str) and title else "JSON Schema"


class LatencyBelow(_Check, tag="latency_below", frozen=True):
    about = About(
        name="Answered within",
        summary="Passes when the agent answered within this many milliseconds (in a "
        "conversation each turn did, or all turns together with total).",
        asks="ms, and total only for a conversation's whole time",
        example={"ms": 2000},
    )
    ms: Annotated[int, msgspec.Meta(ge=1, le=3_600_000)]
    # A conversation's own check: all its turns together rather than each one.
    total: bool = False

    def detail(self) -> str:
        return f"{self.ms:,} ms" + (" in total" if self.total else "")


# A criterion's calibration examples: few and short, since every judge call of it carries them.
MAX_JUDGE_EXAMPLES = 10
MAX_EXAMPLE_REPLY_CHARS = 4_000
MAX_EXAMPLE_NOTE_CHARS = 1_000


class JudgeExample(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A reply people judged against the criterion (often where the judge got it wrong): what
    they decided and why. The judge's prompt carries it, as data, to calibrate the judge."""

    reply: Annotated[str, msgspec.Meta(max_length=MAX_EXAMPLE_REPLY_CHARS)]
    verdict: Literal["passed", "failed"]
    note: Annotated[str, msgspec.Meta(max_length=MAX_EXAMPLE_NOTE_CHARS)] | None = None


JudgeExamples = Annotated[tuple[JudgeExample, ...], msgspec.Meta(max_length=MAX_JUDGE_EXAMPLES)]


class LlmJudge(_Check, tag="llm_judge", frozen=True):
    about = About(
        name="AI judge: meets a criterion",
        summary="Passes when the AI judge decides the reply meets the criterion.",
        asks="criterion (one plain-English claim about the reply)",
        example={"criterion": "The reply says when the refund arrives."},
    )
    criterion: Criterion
    # Left out until a person adds one (from Review, or by writing it); changing them makes a
    # new revision of the case, and a new question for the judge cache.
    examples: JudgeExamples | msgspec.UnsetType = msgspec.UNSET

    def detail(self) -> str:
        return self.criterion


Check = (
    ToolCalled
    | ToolNotCalled
    | ToolOrder
    | MaxToolCalls
    | ToolArgsValid
    | OutputContains
    | OutputNotContains
    | OutputEquals
    | OutputValidJson
    | OutputMatchesSchema
    | LatencyBelow
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
# Fields people add after a check is written (an AI-judge criterion's calibration examples):
# never asked of the model that generates cases.
CALIBRATION_FIELDS = ("examples",)


def written_fields(check_class: type[Check]) -> tuple[str, ...]:
    """The fields a check type adds to id and severity, in the order its class declares them."""
    names = (field.name for field in msgspec.structs.fields(check_class))
    return tuple(name for name in names if name not in COMMON_FIELDS)


def generated_fields(check_class: type[Check]) -> tuple[str, ...]:
    """The fields a generated case's check of this type is asked for."""
    return tuple(name for name in written_fields(check_class) if name not in CALIBRATION_FIELDS)


ABOUT: Mapping[CheckType, About] = {type_of(cls): cls.about for cls in CHECK_CLASSES}
# The names people know the check types by, in the documented order.
PRODUCT_NAMES: dict[CheckType, str] = {name: about.name for name, about in ABOUT.items()}
WRITTEN_FIELDS: Mapping[CheckType, tuple[str, ...]] = {
    type_of(cls): written_fields(cls) for cls in CHECK_CLASSES
}


def _compact(value: object) -> str:
    """A JSON value on one line, as a list of checks shows expected arguments."""
    return msgspec.json.encode(value).decode()


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
