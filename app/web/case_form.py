"""The rubric editor's form: a case as fields people type, and back, with errors by field.

The whole editor state travels in the form (the checks as `checks-N-...` fields), so every
action (add a check, remove one, preview, save) is a plain POST that works without JavaScript;
htmx only swaps the editor instead of reloading the page. Nothing here does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from agentlasso.domain.checks import (
    ABOUT,
    COMMON_FIELDS,
    PRODUCT_NAMES,
    WRITTEN_FIELDS,
    About,
    CheckType,
)
from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import FieldError
from agentlasso.grading.legacy import criteria_checks
from agentlasso.schemas.test_cases import TestCaseCreate
from agentlasso.web.forms import in_words, json_problem, parsed_json

# A check's fields, each shown by the form field of the same name.
_CHECK_FIELDS = frozenset(COMMON_FIELDS).union(*WRITTEN_FIELDS.values())
_CASE_FIELDS = ("input", "description", "expected_output", "evaluation_type", "min_confidence")
_CHECK_KEY = re.compile(r"^checks-(\d{1,3})-([a-z_]+)$")


class CheckForm(msgspec.Struct, kw_only=True):
    """One check as its form shows it (all text, as typed)."""

    type: CheckType
    id: str = ""
    tool: str = ""
    # One tool per line.
    tools: str = ""
    value: str = ""
    regex: bool = False
    criterion: str = ""
    severity: str = "critical"

    @property
    def product_name(self) -> str:
        return PRODUCT_NAMES[self.type]

    @property
    def about(self) -> About:
        return ABOUT[self.type]


class CaseForm(msgspec.Struct, kw_only=True):
    """The rubric editor's fields, as typed."""

    input: str = ""
    # "text": the input is sent as typed; "json": it is a JSON object.
    input_format: str = "text"
    description: str = ""
    expected_output: str = ""
    evaluation_type: str = "SCORE"
    min_confidence: str = "70"
    checks: list[CheckForm] = msgspec.field(default_factory=list)
    # An older case's evaluation_criteria_json, as JSON text (kept as it was).
    older_criteria: str = ""
    # The case has no checks list: it is graded from its older criteria until converted.
    uses_older_criteria: bool = False


def from_content(content: TestCaseContent) -> CaseForm:
    """The form showing a stored case."""
    is_json = isinstance(content.input, dict)
    return CaseForm(
        input=json.dumps(content.input, indent=2) if is_json else str(content.input),
        input_format="json" if is_json else "text",
        description=content.description or "",
        expected_output=content.expected_output or "",
        evaluation_type=content.evaluation_type,
        min_confidence=str(content.min_confidence),
        checks=[_check_form(msgspec.to_builtins(check)) for check in content.checks or ()],
        older_criteria=""
        if content.evaluation_criteria_json is None
        else json.dumps(content.evaluation_criteria_json, indent=2),
        uses_older_criteria=content.checks is None and content.evaluation_criteria_json is not None,
    )


def _check_form(fields: dict[str, Any]) -> CheckForm:
    return CheckForm(
        type=fields["type"],
        id=fields.get("id") or "",
        tool=fields.get("tool", ""),
        tools="\n".join(fields.get("tools", ())),
        value=fields.get("value", ""),
        regex=bool(fields.get("regex", False)),
        criterion=fields.get("criterion", ""),
        severity=fields.get("severity", "critical"),
    )


def from_form_data(data: Mapping[str, Any]) -> CaseForm:
    """The form as posted (unknown fields ignored; missing ones empty)."""
    text = {name: _text(data.get(name)) for name in (*_CASE_FIELDS, "input_format")}
    checks: dict[int, dict[str, Any]] = {}
    for key in data:
        match = _CHECK_KEY.match(key)
        if match:
            checks.setdefault(int(match.group(1)), {})[match.group(2)] = _text(data.get(key))
    forms = [_posted_check(fields) for _, fields in sorted(checks.items()) if "type" in fields]
    return CaseForm(
        input=text["input"],
        input_format="json" if text["input_format"] == "json" else "text",
        description=text["description"],
        expected_output=text["expected_output"],
        evaluation_type=text["evaluation_type"] or "SCORE",
        min_confidence=text["min_confidence"],
        checks=[form for form in forms if form is not None],
        older_criteria=_text(data.get("older_criteria")),
        uses_older_criteria=_text(data.get("uses_older_criteria")) == "1",
    )


def _posted_check(fields: dict[str, str]) -> CheckForm | None:
    if fields["type"] not in PRODUCT_NAMES:
        return None
    return CheckForm(
        type=fields["type"],
        id=fields.get("id", "").strip(),
        tool=fields.get("tool", ""),
        tools=fields.get("tools", ""),
        value=fields.get("value", ""),
        regex=fields.get("regex", "") in ("on", "true", "1"),
        criterion=fields.get("criterion", ""),
        severity=fields.get("severity", "critical"),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def to_content(form: CaseForm) -> tuple[TestCaseContent | None, dict[str, str]]:
    """The case the form describes, or the problems by form field (the same rules a written
    case meets through the API)."""
    errors: dict[str, str] = {}
    payload: dict[str, Any] = {
        "input": _input(form, errors),
        "description": form.description.strip() or None,
        "expected_output": form.expected_output.strip() or None,
        "evaluation_type": form.evaluation_type,
        "min_confidence": _whole_number(form.min_confidence, "min_confidence", errors),
        "checks": None
        if form.uses_older_criteria
        else [_check_payload(check) for check in form.checks],
        "evaluation_criteria_json": _older(form, errors),
    }
    if errors:
        return None, errors
    try:
        written = msgspec.convert(payload, TestCaseCreate)
    except msgspec.ValidationError as exc:
        error = field_error_from_msgspec(exc)
        return None, {field_of(error.pointer): in_words(error.detail)}
    return written.content(), {}


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


# How each field a check type may have is read from its form field (a check type's fields are
# its class's: agentlasso.domain.checks.WRITTEN_FIELDS). A test holds every field to a reader.
FIELD_READERS: Mapping[str, Callable[[CheckForm], Any]] = {
    "tool": lambda check: check.tool.strip(),
    "tools": lambda check: [line.strip() for line in check.tools.splitlines() if line.strip()],
    # The text as typed: its spaces may be what the check looks for.
    "value": lambda check: check.value,
    "regex": lambda check: check.regex,
    "criterion": lambda check: check.criterion.strip(),
}


def _check_payload(check: CheckForm) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": check.type, "severity": check.severity}
    if check.id:
        payload["id"] = check.id
    for field in WRITTEN_FIELDS[check.type]:
        payload[field] = FIELD_READERS[field](check)
    return payload


def field_of(pointer: str | None) -> str:
    """The form field a JSON pointer into a written case names ("/checks/2/tool" is
    "checks-2-tool"); the form as a whole ("") when it names none."""
    parts = (pointer or "").strip("/").split("/")
    if parts[0] == "checks" and len(parts) >= 3 and parts[1].isdigit():
        field = parts[2] if parts[2] in _CHECK_FIELDS else "type"
        return f"checks-{parts[1]}-{field}"
    if parts[0] == "checks" and len(parts) == 2 and parts[1].isdigit():
        return f"checks-{parts[1]}-type"
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
    forms = [_check_form(msgspec.to_builtins(check)) for check in checks]
    return forms, [item.text for item in items if item.kind == "free_text_rubric_item"]


def with_older_criteria_converted(form: CaseForm) -> CaseForm:
    """An older case with checks of its own: the checks its criteria were graded as, and an AI
    judge check for each free-text item (which were not graded at all)."""
    checks, free_text = older_criteria(form)
    judged = [CheckForm(type="llm_judge", criterion=text) for text in free_text]
    return msgspec.structs.replace(
        form, checks=[*form.checks, *checks, *judged], uses_older_criteria=False
    )
