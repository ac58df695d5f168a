"""Reading a generation's answers: a plan into slots, a case into a candidate or the reason it
is dropped (pure). Nothing here trusts the model: every tool it names must be the agent's, and
every check must be one a test case could be written with."""

from __future__ import annotations

import itertools
from typing import Any, TypeVar

import msgspec

from agentlasso.domain.case_drafts import CATEGORIES, AgentProfile, Candidate, Category, Slot
from agentlasso.domain.checks import (
    CHECK_CLASSES,
    Check,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
    duplicate_check_ids,
    type_of,
)
from agentlasso.domain.json_nesting import TOO_DEEP_WORDS, too_deep
from agentlasso.domain.test_cases import EvaluationType, TestCaseContent
from agentlasso.generation.prompts import OBJECT_FIELDS, happy_path_cap
from agentlasso.judge.verdicts import ModelOutput

MAX_INPUT_CHARS = 10_000
MAX_CASE_CHECKS = 10
Answer = TypeVar("Answer")
_CHECK_CLASS = {type_of(cls): cls for cls in CHECK_CLASSES}
# Kinds a default slot may take, in the order they are handed out when a plan falls short.
_FILLER: tuple[Category, ...] = tuple(c for c in CATEGORIES if c != "happy_path")
_NEED_TOOLS: frozenset[Category] = frozenset({"tool_error", "tool_chain"})


class PlannedSlot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A slot as the model wrote it."""

    category: Category
    tool: str
    intent: str


class PlanAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The plan: the slots to fill."""

    slots: list[PlannedSlot]


class CaseAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One case as the model wrote it; its checks are read one by one below."""

    input: str
    description: str
    tools_expected: list[str]
    tools_forbidden: list[str]
    checks: list[dict[str, Any]]
    expected_output: str
    evaluation_type: EvaluationType


def read_plan(output: ModelOutput, *, forced_tool: bool) -> list[PlannedSlot] | str:
    """The plan's slots, or why the answer cannot be used."""
    answer = _decoded(output, PlanAnswer, forced_tool=forced_tool)
    return answer if isinstance(answer, str) else answer.slots


def balanced_slots(planned: list[PlannedSlot], count: int, profile: AgentProfile) -> list[Slot]:
    """Exactly `count` slots: the plan's, the happy path cut to about a third, unknown tools
    dropped, repeats removed, and any shortfall filled round the other kinds of case."""
    tools = sorted(profile.tool_names)
    slots: list[Slot] = []
    seen: set[tuple[str, str]] = set()
    happy = 0
    for item in planned:
        if len(slots) == count:
            break
        key = (item.category, item.intent.strip().casefold())
        if key in seen or not item.intent.strip():
            continue
        if item.category == "happy_path":
            if happy >= happy_path_cap(count):
                continue
            happy += 1
        tool = item.tool if item.tool in profile.tool_names else ""
        seen.add(key)
        slots.append(Slot(category=item.category, tool=tool, intent=item.intent.strip()))
    filler = (c for c in itertools.cycle(_FILLER) if tools or c not in _NEED_TOOLS)
    cycled_tools = itertools.cycle(tools or [""])
    while len(slots) < count:
        category = next(filler)
        tool = next(cycled_tools)
        about = f" with {tool}" if tool else ""
        intent = f"{category.replace('_', ' ')}{about}, case {len(slots) + 1}"
        slots.append(Slot(category=category, tool=tool, intent=intent))
    return slots


def read_candidate(
    output: ModelOutput, slot: Slot, profile: AgentProfile, *, forced_tool: bool
) -> Candidate | str:
    """The candidate in an answer, or why it is dropped."""
    answer = _decoded(output, CaseAnswer, forced_tool=forced_tool)
    if isinstance(answer, str):
        return answer
    text = answer.input.strip()
    if not text:
        return "the case has no input"
    if len(text) > MAX_INPUT_CHARS:
        return f"the input is over {MAX_INPUT_CHARS:,} characters"
    checks = _checks(answer.checks)
    if isinstance(checks, str):
        return checks
    expected = answer.expected_output.strip() or None
    if not checks and expected is None:
        return "the case has neither checks nor an expected output"
    unknown = _unknown_tools(answer, checks, profile)
    if unknown:
        return f"it names a tool the agent does not have: {', '.join(unknown)}"
    both = sorted(set(answer.tools_expected) & set(answer.tools_forbidden))
    if both:
        return f"it both expects and forbids {', '.join(both)}"
    content = TestCaseContent(
        input=text,
        checks=checks,
        expected_output=expected,
        evaluation_type=answer.evaluation_type,
        description=answer.description.strip() or None,
    )
    return Candidate(
        slot=slot,
        content=content,
        tools_expected=tuple(dict.fromkeys(answer.tools_expected)),
        tools_forbidden=tuple(dict.fromkeys(answer.tools_forbidden)),
    )


def _checks(raw_checks: list[dict[str, Any]]) -> tuple[Check, ...] | str:
    """The checks as a test case would be written with them, or what is wrong with one."""
    if len(raw_checks) > MAX_CASE_CHECKS:
        return f"the case has {len(raw_checks)} checks; at most {MAX_CASE_CHECKS}"
    checks: list[Check] = []
    for index, raw in enumerate(raw_checks):
        try:
            checks.append(msgspec.convert(_used_fields(raw), Check, strict=True))
        except msgspec.ValidationError as exc:
            return f"check {index + 1} is not valid: {exc}"
    if duplicate_check_ids(tuple(checks)):
        return "two checks share an id"
    return tuple(checks)


def _used_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """The check without the empty fields a schema with optional fields invites (a `tool: ""`
    on a text check); any other field its type does not have stays, and makes it invalid."""
    check_class = _CHECK_CLASS.get(raw.get("type"))  # type: ignore[arg-type]
    if check_class is None:
        return raw
    used = {"type", *check_class.__struct_fields__}
    return {
        name: _object_from_text(value) if name in OBJECT_FIELDS else value
        for name, value in raw.items()
        if name in used or value not in (None, "", [], False)
    }


def _object_from_text(value: Any) -> Any:
    """A JSON object sent as text, decoded; anything else (or bad JSON) as it came, to be
    refused by the check's own shape."""
    if not isinstance(value, str):
        return value
    try:
        return msgspec.json.decode(value)
    except msgspec.DecodeError:
        return value


def _unknown_tools(
    answer: CaseAnswer, checks: tuple[Check, ...], profile: AgentProfile
) -> list[str]:
    """Tools the case names that the agent does not have, in the order they appear."""
    named = [*answer.tools_expected, *answer.tools_forbidden]
    for check in checks:
        if isinstance(check, ToolCalled | ToolNotCalled):
            named.append(check.tool)
        elif isinstance(check, ToolOrder):
            named.extend(check.step_names())
    return [name for name in dict.fromkeys(named) if name not in profile.tool_names]


def _decoded(output: ModelOutput, answer_type: type[Answer], *, forced_tool: bool) -> Answer | str:
    """The answer in the format asked for, or why it cannot be used."""
    expected = "tool_use" if forced_tool else "end_turn"
    # Only a normal finish counts: a refusal or a cut-off may still carry parseable JSON.
    if output.stop_reason != expected:
        return f"the model stopped without an answer (stop_reason: {output.stop_reason})"
    try:
        if forced_tool:
            if output.tool_input is None:
                return "the model did not call the tool it was given"
            return msgspec.convert(output.tool_input, answer_type, strict=True)
        if too_deep(output.text) is not None:
            return f"the answer is JSON {TOO_DEEP_WORDS}"
        return msgspec.json.decode(output.text, type=answer_type)
    except msgspec.DecodeError as exc:  # ValidationError included
        return f"the answer did not match the schema: {exc}"
