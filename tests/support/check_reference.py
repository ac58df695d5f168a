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
_READS = {"reply": "the reply", "tool_calls": "the tool calls", "latency": "the latency"}

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
    return _INTRO + rows + "".join(_section(cls) for cls in CHECK_CLASSES) + _ARGUMENTS


_ARGUMENTS = """
## Tool arguments, when they matter

Tool checks match on the tool's name only, unless a check lists `arguments`: agents word
arguments in many equally right ways, and a check on them is worth writing only where a value
is what the case is about (the refund's amount, the order's id). A `tool_called` check, and
any entry of a `tool_order` check written as `{"tool": ..., "arguments": {...}}`, then passes
only for a call of that tool whose arguments hold every listed key with an equal value (JSON
equality: `1` equals `1.0`, `true` is not `1`; a nested object or list must be equal whole).
With `arguments_match: "exact"` the call may have no other key. Arguments an agent sent as a
JSON string are parsed first. Nothing looser: a "partial" match passes arguments an agent
invented.

A listed value may be a matcher instead:

| Matcher | Passes when the argument |
|---|---|
| `{"$regex": "^re_[0-9]+$"}` | is a string the RE2 pattern matches (caseless unless `(?-i)`) |
| `{"$gte": 10}`, `{"$lte": 100}` (together too) | is a number at least / at most that |
| `{"$any": true}` | is there, with any value |

A matcher stands for a whole top-level argument. One that is not one (`$regexp`), a `$regex`
that does not compile, or a schema of `output_matches_schema` that cannot be compiled is
refused when the case is written (a 422 naming where). A failing check names the closest call
and the first key that differed: `stripe.refund was called with amount 50; expected 42.`

`output_matches_schema` and `tool_args_valid` use JSON Schema draft 2020-12 (a schema of at
most 64 KiB, references only within it; every `pattern` runs in linear time). The tools
`tool_args_valid` reads are the agent's `tools` as registered (`{"name", "input_schema"}` or
OpenAI's `{"type": "function", "function": {"name", "parameters"}}`), taken when a server-mode
run starts; a CI-mode run is given them in `POST /api/v1/eval-runs` `tools`. A declared
input schema that cannot be compiled is refused where it is written (the agent, or the run),
a 422 naming where (`/tools/0/input_schema/properties/amount/minimum`).
"""


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
    if field.default is msgspec.UNSET:
        return f"`{name}`: {kind}; optional"
    return f"`{name}`: {kind}; optional, default `{json.dumps(field.default)}`"


def _kind(field_type: msgspec.inspect.Type) -> str:
    if isinstance(field_type, msgspec.inspect.UnionType):
        kinds = [_kind(t) for t in field_type.types if not isinstance(t, msgspec.inspect.NoneType)]
        return " or ".join(kinds)
    if isinstance(field_type, msgspec.inspect.DictType):
        return "a JSON object" + _between(field_type.min_length, field_type.max_length, "keys")
    if isinstance(field_type, msgspec.inspect.StructType):
        fields = ", ".join(f"`{field.name}`" for field in field_type.fields)
        return f"an object of {fields}"
    if isinstance(field_type, msgspec.inspect.IntType):
        return "a whole number" + _range(field_type.ge, field_type.le)
    if isinstance(field_type, msgspec.inspect.LiteralType):
        return " or ".join(f"`{value}`" for value in field_type.values)
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


def _range(least: int | None, most: int | None) -> str:
    """` from 0 to 10,000`; nothing when the field has no bounds."""
    if least is None and most is None:
        return ""
    return f" from {least or 0:,}" + ("" if most is None else f" to {most:,}")


def _lowered(summary: str) -> str:
    """`Passes when the reply ...` as the table's column reads it: `the reply ...`."""
    return summary.removeprefix("Passes when ").rstrip(".")


if COMMON_FIELDS != ("id", "severity"):
    raise ImportError("the page's introduction describes id and severity: update it")

if __name__ == "__main__":
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(reference_page(), encoding="utf-8")
    print(f"wrote {PAGE}")
