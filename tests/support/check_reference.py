"""docs/reference/checks.md, written from the check classes and their `about`
(app/domain/checks.py), so the page cannot drift from what the API takes.

    .venv/bin/python -m tests.support.check_reference     # rewrites the page

tests/unit/test_check_types.py holds the committed page equal to `reference_page()`.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from agentlasso.domain.checks import CHECK_CLASSES, COMMON_FIELDS, Check, type_of, written_fields
from agentlasso.grading.registry import GRADERS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "checks.md"
# What a check's grader needs, as the page says it.
_READS = {"reply": "the reply", "tool_calls": "the tool calls"}

_INTRO = """\
# Check types

<!-- Generated from app/domain/checks.py by `python -m tests.support.check_reference`:
     edit the check classes' `about`, not this page. -->

A test case's `checks` is a list of checks, each an object whose `type` says which of the
kinds below it is. Every check also has an optional `id` (assigned `c1, c2, ...` when left
out; unique within the case) and a `severity`: `critical` (the default) or `minor`. A case
passes when no critical check failed and no critical check went ungraded.

| Type | Name | Passes when | Reads |
|---|---|---|---|
"""


def reference_page() -> str:
    """The whole page: the table of check types, then each type with its fields and an example."""
    rows = "".join(
        f"| `{type_of(cls)}` | {cls.about.name} | {_lowered(cls.about.summary)} "
        f"| {_READS[GRADERS[cls].needs]} |\n"
        for cls in CHECK_CLASSES
    )
    return _INTRO + rows + "".join(_section(cls) for cls in CHECK_CLASSES)


def _section(check_class: type[Check]) -> str:
    about = check_class.about
    fields = written_fields(check_class)
    listed = "".join(f"- {_field_line(check_class, name)}\n" for name in fields)
    return (
        f"\n## `{type_of(check_class)}` ({about.name})\n\n{about.summary}\n\n"
        + (f"Fields:\n\n{listed}" if fields else "No fields besides `id` and `severity`.\n")
        + f"\n```json\n{example_json(check_class)}\n```\n"
    )


def example_json(check_class: type[Check]) -> str:
    """The check's `about.example` as a written check: its type first, then its fields."""
    return json.dumps({"type": type_of(check_class), **check_class.about.example}, indent=2)


def _field_line(check_class: type[Check], name: str) -> str:
    field = next(f for f in msgspec.structs.fields(check_class) if f.name == name)
    kind = _kind(msgspec.inspect.type_info(field.type))
    if field.required:
        return f"`{name}`: {kind}; required"
    return f"`{name}`: {kind}; optional, default `{json.dumps(field.default)}`"


def _kind(field_type: msgspec.inspect.Type) -> str:
    if isinstance(field_type, msgspec.inspect.StrType):
        return "text" + _between(field_type.min_length, field_type.max_length, "characters")
    if isinstance(field_type, msgspec.inspect.BoolType):
        return "true or false"
    if isinstance(field_type, msgspec.inspect.VarTupleType | msgspec.inspect.ListType):
        items = _between(field_type.min_length, field_type.max_length, "items")
        return f"a list{items}, each {_kind(field_type.item_type)}"
    raise TypeError(f"no words for a check field of type {field_type}")


def _between(least: int | None, most: int | None, unit: str) -> str:
    """` of 1 to 256 characters`; nothing when the field has no bounds."""
    if most is None:
        return "" if least is None else f" of at least {least:,} {unit}"
    return f" of {least or 0:,} to {most:,} {unit}"


def _lowered(summary: str) -> str:
    """`Passes when the reply ...` as the table's column reads it: `the reply ...`."""
    return summary.removeprefix("Passes when ").rstrip(".")


if COMMON_FIELDS != ("id", "severity"):
    raise ImportError("the page's introduction describes id and severity: update it")

if __name__ == "__main__":
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(reference_page(), encoding="utf-8")
    print(f"wrote {PAGE}")
