"""The rubric editor's form: a case as fields people type, and back, with errors by field.

The whole editor state travels in the form (the checks as `checks-N-...` fields), so every
action (add a check, remove one, preview, save) is a plain POST that works without JavaScript;
htmx only swaps the editor instead of reloading the page. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import FieldError
from agentlasso.grading.legacy import criteria_checks
from agentlasso.schemas.test_cases import TestCaseCreate
from agentlasso.web import conversation_form
from agentlasso.web.check_form import (
    FIELD_READERS,
    CheckForm,
    check_field,
    check_form,
    check_payload,
    posted_checks,
)
from agentlasso.web.conversation_form import ConversationForm, TurnForm
from agentlasso.web.forms import in_words, json_problem, parsed_json

__all__ = ["FIELD_READERS", "CaseForm", "CheckForm"]

_CASE_FIELDS = (
    "input", "description", "tags", "expected_output", "evaluation_type", "min_confidence",
    "tool_fixtures",
)  # fmt: skip


class CaseForm(msgspec.Struct, kw_only=True):
    """The rubric editor's fields, as typed."""

    input: str = ""
    # "text": the input is sent as typed; "json": it is a JSON object.
    input_format: str = "text"
    description: str = ""
    # The tags, comma-separated (a tag holds no comma or whitespace).
    tags: str = ""
    expected_output: str = ""
    # The tool fixtures as JSON text (an object: tool name -> its answers); blank: none.
    tool_fixtures: str = ""
    evaluation_type: str = "SCORE"
    min_confidence: str = "70"
    checks: list[CheckForm] = msgspec.field(default_factory=list)
    # An older case's evaluation_criteria_json, as JSON text (kept as it was).
    older_criteria: str = ""
    # The case has no checks list: it is graded from its older criteria until converted.
    uses_older_criteria: bool = False
    # A conversation case (its turns and simulated user); None: a single-turn case.
    conversation: ConversationForm | None = None


def from_content(content: TestCaseContent) -> CaseForm:
    """The form showing a stored case."""
    is_json = isinstance(content.input, dict)
    conversation = content.conversation
    return CaseForm(
        input=json.dumps(content.input, indent=2) if is_json else str(content.input or ""),
        input_format="json" if is_json else "text",
        description=content.description or "",
        tags=", ".join(content.tags),
        expected_output=content.expected_output or "",
        tool_fixtures=""
        if not content.tool_fixtures
        else json.dumps(msgspec.to_builtins(content.tool_fixtures), indent=2),
        evaluation_type=content.evaluation_type,
        min_confidence=str(content.min_confidence),
        checks=[check_form(msgspec.to_builtins(check)) for check in content.checks or ()],
        older_criteria=""
        if content.evaluation_criteria_json is None
        else json.dumps(content.evaluation_criteria_json, indent=2),
        uses_older_criteria=content.checks is None and content.evaluation_criteria_json is not None,
        conversation=None
        if conversation is None
        else conversation_form.from_conversation(conversation),
    )


def from_form_data(data: Mapping[str, Any]) -> CaseForm:
    """The form as posted (unknown fields ignored; missing ones empty)."""
    text = {name: _text(data.get(name)) for name in (*_CASE_FIELDS, "input_format")}
    is_conversation = _text(data.get("kind")) == "conversation"
    return CaseForm(
        input=text["input"],
        input_format="json" if text["input_format"] == "json" else "text",
        description=text["description"],
        tags=text["tags"],
        expected_output=text["expected_output"],
        tool_fixtures=text["tool_fixtures"],
        evaluation_type=text["evaluation_type"] or "SCORE",
        min_confidence=text["min_confidence"],
        checks=posted_checks(data, "checks"),
        older_criteria=_text(data.get("older_criteria")),
        uses_older_criteria=_text(data.get("uses_older_criteria")) == "1",
        conversation=conversation_form.from_posted(data) if is_conversation else None,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def to_content(form: CaseForm) -> tuple[TestCaseContent | None, dict[str, str]]:
    """The case the form describes, or the problems by form field (the same rules a written
    case meets through the API)."""
    errors: dict[str, str] = {}
    payload: dict[str, Any] = {
        "input": None if form.conversation is not None else _input(form, errors),
        "description": form.description.strip() or None,
        "tags": typed_tags(form.tags),
        "expected_output": form.expected_output.strip() or None,
        "evaluation_type": form.evaluation_type,
        "min_confidence": _whole_number(form.min_confidence, "min_confidence", errors),
        "checks": None
        if form.uses_older_criteria
        else [check_payload(check) for check in form.checks],
        "evaluation_criteria_json": _older(form, errors),
        "tool_fixtures": _fixtures(form, errors),
    }
    if form.conversation is not None:
        payload["conversation"] = conversation_form.payload(form.conversation, errors)
    if errors:
        return None, errors
    try:
        written = msgspec.convert(payload, TestCaseCreate)
    except msgspec.ValidationError as exc:
        error = field_error_from_msgspec(exc)
        return None, {field_of(error.pointer): in_words(error.detail)}
    return written.content(), {}


def typed_tags(typed: str) -> list[str]:
    """Tags typed comma-separated: each trimmed, blanks dropped (the rest checked as written)."""
    return [tag for tag in (part.strip() for part in typed.split(",")) if tag]


def _input(form: CaseForm, errors: dict[str, str]) -> Any:
    if form.input_format != "json":
        return form.input
    value, problem = parsed_json(form.input)
    if problem:
        errors["input"] = f"{problem} Choose Text for an input that is not a JSON object."
    return value


def _whole_number(text: str, field: str, errors: dict[str, str]) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        errors[field] = "Enter a whole number from 0 to 100."
        return None


def _fixtures(form: CaseForm, errors: dict[str, str]) -> Any:
    """The typed tool fixtures (None when blank), or their problem under their field."""
    value, problem = parsed_json(form.tool_fixtures, dict)
    if problem is not None:
        errors["tool_fixtures"] = f"The tool fixtures are not valid here: {problem}"
    return value or None


def _older(form: CaseForm, errors: dict[str, str]) -> Any:
    if not form.older_criteria.strip():
        return None
    if (problem := json_problem(form.older_criteria)) is not None:
        errors["older_criteria"] = f"The older criteria are not valid here: {problem}"
        return None
    try:
        return json.loads(form.older_criteria)
    except json.JSONDecodeError:
        errors["older_criteria"] = "The older criteria are not valid JSON."
        return None


def field_of(pointer: str | None) -> str:
    """The form field a JSON pointer into a written case names ("/checks/2/tool" is
    "checks-2-tool"); the form as a whole ("") when it names none."""
    parts = (pointer or "").strip("/").split("/")
    if parts[0] == "conversation":
        return conversation_form.field_of(parts[1:])
    if parts[0].startswith("pasted_"):
        return parts[0]
    if parts[0] == "checks" and len(parts) >= 2 and parts[1].isdigit():
        return check_field(f"checks-{parts[1]}", parts[2:])
    if parts[0] in _CASE_FIELDS:
        return parts[0]
    if parts[0] == "evaluation_criteria_json":
        return "older_criteria"
    return ""


def errors_by_field(problems: list[FieldError]) -> dict[str, str]:
    """Service problems as the form shows them, each next to its field."""
    errors: dict[str, str] = {}
    for problem in problems:
        errors.setdefault(field_of(problem.pointer), problem.detail)
    return errors


def with_check_added(form: CaseForm, check_type: str) -> CaseForm:
    """The form with an empty check of this type at the end."""
    if check_type not in PRODUCT_NAMES:
        return form
    new = CheckForm(type=check_type)
    return msgspec.structs.replace(form, checks=[*form.checks, new])


def with_check_removed(form: CaseForm, index: int) -> CaseForm:
    """The form without its check at `index`."""
    checks = [check for position, check in enumerate(form.checks) if position != index]
    return msgspec.structs.replace(form, checks=checks)


def older_criteria(form: CaseForm) -> tuple[list[CheckForm], list[str]]:
    """What an older case's criteria stand for: the checks they are graded as, and the
    free-text items that are not graded."""
    if json_problem(form.older_criteria) is not None:
        return [], []
    try:
        criteria = json.loads(form.older_criteria) if form.older_criteria.strip() else None
    except json.JSONDecodeError:
        return [], []
    checks, items = criteria_checks(criteria)
    forms = [check_form(msgspec.to_builtins(check)) for check in checks]
    return forms, [item.text for item in items if item.kind == "free_text_rubric_item"]


def with_older_criteria_converted(form: CaseForm) -> CaseForm:
    """An older case with checks of its own: the checks its criteria were graded as, and an AI
    judge check for each free-text item (which were not graded at all)."""
    checks, free_text = older_criteria(form)
    judged = [CheckForm(type="llm_judge", criterion=text) for text in free_text]
    return msgspec.structs.replace(
        form, checks=[*form.checks, *checks, *judged], uses_older_criteria=False
    )


def with_action(form: CaseForm, action: str) -> tuple[CaseForm, str] | None:
    """The form after an editing action on a conversation (or making the case one), and where
    focus goes; None when the action is not one of these."""
    name, _, argument = action.partition(":")
    conversation = form.conversation or ConversationForm()
    numbers = [int(part) for part in argument.split(":") if part.isdigit()]
    if name == "to_conversation":
        first = TurnForm(user=form.input, format=form.input_format)
        made = msgspec.structs.replace(form, input="", conversation=ConversationForm(turns=[first]))
        return made, "turns-0-legend"
    if name == "to_single_turn" and len(conversation.turns) <= 1:
        first = conversation.turns[0] if conversation.turns else TurnForm()
        single = msgspec.structs.replace(
            form, input=first.user, input_format=first.format, conversation=None,
            checks=[*first.checks, *form.checks],
        )  # fmt: skip
        return single, "case-heading"
    if form.conversation is None:
        return None
    if name == "add_turn":
        added = conversation_form.with_turn_added(conversation)
        return _with(form, added), f"turns-{len(added.turns) - 1}-legend"
    if name == "remove_turn" and len(numbers) == 1:
        return _with(form, conversation_form.with_turn_removed(conversation, numbers[0])), "turns"
    if name == "turn_add" and len(numbers) == 1:
        check_type = argument.split(":")[-1]
        turned = conversation_form.with_turn_check(conversation, numbers[0], check_type)
        checks = turned.turns[numbers[0]].checks if numbers[0] < len(turned.turns) else []
        return _with(form, turned), f"turns-{numbers[0]}-checks-{len(checks) - 1}"
    if name == "turn_remove" and len(numbers) == 2:
        turned = conversation_form.with_turn_check(conversation, numbers[0], None, numbers[1])
        return _with(form, turned), f"turns-{numbers[0]}-legend"
    return None


def _with(form: CaseForm, conversation: ConversationForm) -> CaseForm:
    return msgspec.structs.replace(form, conversation=conversation)
