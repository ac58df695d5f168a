"""One check as the rubric editor's form shows it, and back: the same fields whether the check
is the case's own (`checks-N-...`) or a conversation turn's (`turns-T-checks-N-...`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from agentlasso.domain.checks import (
    ABOUT,
    CHECK_CLASSES,
    COMMON_FIELDS,
    PRODUCT_NAMES,
    WRITTEN_FIELDS,
    About,
    CheckType,
    type_of,
)


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
    # Expected arguments (a JSON object, as text; blank: names only) and how they compare.
    arguments: str = ""
    arguments_match: str = "subset"
    count: str = ""
    ignore_case: bool = True
    trim: bool = True
    # A JSON Schema, as text.
    schema: str = ""
    ms: str = ""
    total: bool = False
    # An AI-judge criterion's calibration examples, as JSON text (added from Review).
    examples: str = ""

    @property
    def product_name(self) -> str:
        return PRODUCT_NAMES[self.type]

    @property
    def about(self) -> About:
        return ABOUT[self.type]


# A check's fields, each shown by the form field of the same name.
CHECK_FIELDS = frozenset(COMMON_FIELDS).union(*WRITTEN_FIELDS.values())


def check_field(key: str, below: list[str]) -> str:
    """The form field of the check at `key` ("checks-2", "turns-0-checks-1") that a pointer's
    parts below the check name: an error deep in a field ("schema/properties/a/type") is shown
    by that field, one about the check as a whole by its type."""
    field = below[0] if below and below[0] in CHECK_FIELDS else "type"
    return f"{key}-{field}"


def check_form(fields: dict[str, Any]) -> CheckForm:
    """The form showing a stored check (its builtins)."""
    return CheckForm(
        type=fields["type"],
        id=fields.get("id") or "",
        tool=fields.get("tool") or "",
        tools="\n".join(_step_line(step) for step in fields.get("tools", ())),
        value=fields.get("value", ""),
        regex=bool(fields.get("regex", False)),
        criterion=fields.get("criterion", ""),
        severity=fields.get("severity", "critical"),
        arguments=_json_text(fields.get("arguments")),
        arguments_match=fields.get("arguments_match", "subset"),
        count=str(fields.get("count", "")),
        ignore_case=bool(fields.get("ignore_case", True)),
        trim=bool(fields.get("trim", True)),
        schema=_json_text(fields.get("schema"), indent=2),
        ms=str(fields.get("ms", "")),
        total=bool(fields.get("total", False)),
        examples=_json_text(fields.get("examples"), indent=2),
    )


def _step_line(step: str | dict[str, Any]) -> str:
    """A tool order's entry as its line: the name, then any arguments as JSON."""
    if isinstance(step, str):
        return step
    return f"{step['tool']} {_json_text(step.get('arguments'))}".rstrip()


def _json_text(value: Any, indent: int | None = None) -> str:
    if value is None:
        return ""
    return json.dumps(value, indent=indent, ensure_ascii=False)


def posted_checks(data: Mapping[str, Any], prefix: str) -> list[CheckForm]:
    """The checks posted under `prefix` (`checks`, `turns-2-checks`), in their order; a check
    of an unknown type is left out."""
    key = re.compile(rf"^{re.escape(prefix)}-(\d{{1,3}})-([a-z_]+)$")
    checks: dict[int, dict[str, str]] = {}
    for name in data:
        match = key.match(name)
        if match:
            value = data.get(name)
            checks.setdefault(int(match.group(1)), {})[match.group(2)] = (
                value if isinstance(value, str) else ""
            )
    forms = [_posted_check(fields) for _, fields in sorted(checks.items()) if "type" in fields]
    return [form for form in forms if form is not None]


def _posted_check(fields: dict[str, str]) -> CheckForm | None:
    if fields["type"] not in PRODUCT_NAMES:
        return None
    ticked = {name: fields.get(name, "") in ("on", "true", "1") for name in _TICKS}
    return CheckForm(
        type=fields["type"],
        id=fields.get("id", "").strip(),
        tool=fields.get("tool", ""),
        tools=fields.get("tools", ""),
        value=fields.get("value", ""),
        criterion=fields.get("criterion", ""),
        severity=fields.get("severity", "critical"),
        arguments=fields.get("arguments", ""),
        arguments_match=fields.get("arguments_match", "subset"),
        count=fields.get("count", ""),
        schema=fields.get("schema", ""),
        ms=fields.get("ms", ""),
        examples=fields.get("examples", ""),
        **ticked,
    )


# Check boxes: ticked posts "on", unticked posts nothing.
_TICKS = ("regex", "ignore_case", "trim", "total")


# How each field a check type may have is read from its form field (a check type's fields are
# its class's: agentlasso.domain.checks.WRITTEN_FIELDS). A test holds every field to a reader.
FIELD_READERS: Mapping[str, Callable[[CheckForm], Any]] = {
    "tool": lambda check: check.tool.strip(),
    "tools": lambda check: [
        _step(line.strip()) for line in check.tools.splitlines() if line.strip()
    ],
    # The text as typed: its spaces may be what the check looks for.
    "value": lambda check: check.value,
    "regex": lambda check: check.regex,
    "criterion": lambda check: check.criterion.strip(),
    "arguments": lambda check: _json_value(check.arguments),
    # Subset is what a check without the field does: left out, as the API leaves it.
    "arguments_match": lambda check: (
        None if check.arguments_match == "subset" else check.arguments_match
    ),
    "count": lambda check: _number(check.count),
    "ignore_case": lambda check: check.ignore_case,
    "trim": lambda check: check.trim,
    "schema": lambda check: _json_value(check.schema),
    "ms": lambda check: _number(check.ms),
    "total": lambda check: check.total,
    "examples": lambda check: _json_value(check.examples),
}


def _step(line: str) -> str | dict[str, Any]:
    """A tool order's line: a name, or a name then its arguments as a JSON object."""
    name, brace, rest = line.partition("{")
    if not brace:
        return line
    return {"tool": name.strip(), "arguments": _json_value(brace + rest)}


def _json_value(text: str) -> Any:
    """JSON text decoded; blank is None (not given); bad JSON stays text, which the check's
    shape then refuses by name."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _number(text: str) -> Any:
    """A whole number as typed; anything else stays text, refused by the check's shape."""
    try:
        return int(text.strip())
    except ValueError:
        return text.strip()


def check_payload(check: CheckForm) -> dict[str, Any]:
    """The check as it is written through the API."""
    payload: dict[str, Any] = {"type": check.type, "severity": check.severity}
    if check.id:
        payload["id"] = check.id
    for field in WRITTEN_FIELDS[check.type]:
        value = FIELD_READERS[field](check)
        if value is None or (value == "" and field in _OPTIONAL[check.type]):
            continue  # left blank: the check's default (names only, every tool)
        payload[field] = value
    return payload


# Per type, the fields it may leave out (a tool for max_tool_calls): left out when blank.
_OPTIONAL: Mapping[str, frozenset[str]] = {
    type_of(cls): frozenset(
        field.name for field in msgspec.structs.fields(cls) if field.default is msgspec.UNSET
    )
    for cls in CHECK_CLASSES
}
