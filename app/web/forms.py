"""Reading posted forms: text fields, JSON fields, and the API's rules for what they hold."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.json_nesting import TOO_DEEP, too_deep
from agentlasso.errors import FieldError

T = TypeVar("T")


def text(form: Mapping[str, Any], name: str) -> str:
    """A text field as posted ("" when absent)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def optional_text(form: Mapping[str, Any], name: str) -> str | None:
    """A text field, None when left blank."""
    value = text(form, name).strip()
    return value or None


# A form's JSON field is typed or pasted by a person. Reading it (the nesting check, then the
# parse) runs on the event loop, about 85 ms at this size in the worst case: past it the field
# is refused before either, so a hostile field cannot hold the loop for everyone.
FORM_JSON_MAX_CHARS = 256 * 1024
TOO_BIG = (
    f"Over the {FORM_JSON_MAX_CHARS // 1024} KiB a JSON field of a form takes: set a larger "
    "value through the API or an import."
)


def json_problem(raw: str) -> str | None:
    """Why a form's JSON text is not read at all (too big, or nested too deeply), or None."""
    if len(raw) > FORM_JSON_MAX_CHARS:
        return TOO_BIG
    return TOO_DEEP if too_deep(raw) is not None else None


def parsed_json(raw: str, want: type = dict) -> tuple[Any, str | None]:
    """A JSON field's value (None when blank) and what is wrong with it, in words (or None).

    `want` is dict (a JSON object) or list (a JSON list of objects)."""
    if not raw.strip():
        return None, None
    if (problem := json_problem(raw)) is not None:
        return None, problem
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
    if want is dict and not isinstance(value, dict):
        return None, 'Must be a JSON object: {"key": "value", ...}.'
    if want is list and not (
        isinstance(value, list) and all(isinstance(item, dict) for item in value)
    ):
        return None, "Must be a JSON list of objects: [{...}, ...]."
    return value, None


def json_field(
    form: Mapping[str, Any], name: str, errors: dict[str, str], want: type = dict
) -> Any:
    """A JSON field's value (None when blank); its problem noted in `errors` by the field."""
    value, problem = parsed_json(text(form, name), want)
    if problem:
        errors[name] = problem
    return value


def checked(payload: dict[str, Any], shape: type[T], errors: dict[str, str]) -> T | None:
    """The payload as the API's own request shape (so the page and the API take the same
    values); a problem by field otherwise."""
    try:
        return msgspec.convert(payload, shape)
    except msgspec.ValidationError as exc:
        error = field_error_from_msgspec(exc)
        errors[field_name(error.pointer)] = in_words(error.detail)
        return None


# msgspec's wording of a broken limit, as the person who filled the form in reads it.
_IN_WORDS = (
    (re.compile(r"Expected `str` of length >= 1\b.*"), "This cannot be empty."),
    (re.compile(r"Expected `str` of length <= (\d+)\b.*"), r"At most \1 characters."),
    (re.compile(r"Expected `(?:int|float)` >= (-?\d+(?:\.\d+)?)\b.*"), r"At least \1."),
    (re.compile(r"Expected `(?:int|float)` <= (-?\d+(?:\.\d+)?)\b.*"), r"At most \1."),
    (re.compile(r"Expected `(?:int|float)`, got `str`.*"), "A number, please."),
)


def in_words(detail: str) -> str:
    """A validation message in plain words when it is one of msgspec's limits."""
    for pattern, words in _IN_WORDS:
        if pattern.fullmatch(detail):
            return pattern.sub(words, detail)
    return detail


def field_name(pointer: str | None) -> str:
    """The form field a JSON pointer names: its first segment ("" for the form as a whole)."""
    return (pointer or "").strip("/").split("/")[0]


def by_field(problems: list[FieldError]) -> dict[str, str]:
    """Service problems, each by the form field its pointer names."""
    errors: dict[str, str] = {}
    for problem in problems:
        errors.setdefault(field_name(problem.pointer), problem.detail)
    return errors


def number_field(form: Mapping[str, Any], name: str, kind: type, errors: dict[str, str]) -> Any:
    """The field as a number of this kind (None when blank); an error for it otherwise."""
    raw = text(form, name).strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        errors[name] = "Enter a number." if kind is float else "Enter a whole number."
        return None


def header_lines(raw: str, errors: dict[str, str]) -> dict[str, str]:
    """`Name: value` lines as headers."""
    headers: dict[str, str] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            errors["headers"] = f"Line {number}: write each header as Name: value."
            return {}
        headers[name.strip()] = value.strip()
    return headers
