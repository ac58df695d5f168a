"""One promptfoo assert as checks, keeping promptfoo's meaning, or why it cannot be.

promptfoo's `contains`, `not-contains` and `regex` are case-sensitive; ours match without case
unless a pattern says `(?-i)`, so those become `(?-i)` patterns (RE2) of the escaped value,
except a value with no letters that have case, where plain text means the same.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from agentlasso.grading.patterns import regex_compile_error
from agentlasso.importers.items import js_string
from agentlasso.importers.yaml_documents import YamlProblem, load_yaml

CODE_ASSERTS = frozenset({"javascript", "python", "ruby"})
# promptfoo's template syntax (Nunjucks): `{{ var }}` is filled in from the test's vars.
_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_TEMPLATE = re.compile(r"\{\{|\{%")
_INVERTIBLE = frozenset({"contains", "icontains", "regex"})


class Mapped(msgspec.Struct, frozen=True):
    """The checks an assert became, how (for the report), and the parts of it not kept."""

    checks: list[dict[str, Any]]
    how: str
    losses: list[tuple[str, str]] = msgspec.field(default_factory=list)


def map_assert(assertion: dict[str, Any], variables: dict[str, Any]) -> Mapped | str:
    """The assert as checks, or why it is not imported."""
    kind = str(assertion["type"])
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    value = assertion.get("value")
    if isinstance(value, str) and value.startswith("file://"):
        return "file:// references are not followed; write the value into the file"
    if assertion.get("transform") is not None:
        return "its transform changes the output first; checks grade the reply as it is"
    if isinstance(value, str) and _TEMPLATE.search(value):
        value = _filled(value, variables)
        if value is None:
            return "its value is a template beyond {{var}}; write the value out"
    if inverse and base not in _INVERTIBLE:
        return f"no check passes exactly when {base} fails"
    mapped = _map(base, inverse, value, assertion)
    if isinstance(mapped, str):
        return mapped
    return msgspec.structs.replace(mapped, losses=mapped.losses + _losses(base, assertion))


def _map(base: str, inverse: bool, value: Any, assertion: dict[str, Any]) -> Mapped | str:
    if base in ("contains", "icontains"):
        return _text(base, value, inverse)
    if base == "regex":
        return _regex(value, inverse)
    if base in ("is-json", "contains-json"):
        return _json(base, value)
    if base == "equals":
        return _equals(value)
    if base in ("is-valid-openai-tools-call", "is-valid-openai-function-call"):
        return Mapped(
            [{"type": "tool_args_valid"}],
            "tool_args_valid (against the agent's declared tools, where promptfoo reads the "
            "provider's)",
        )
    if base in ("llm-rubric", "g-eval"):
        return _judge(base, value)
    if base == "latency":
        return _latency(assertion.get("threshold"))
    return _why_not(base)


def _why_not(kind: str) -> str:
    if kind in CODE_ASSERTS:
        return f"{kind} asserts run code; write it as a check"
    if kind == "webhook":
        return "webhook asserts call a server; write it as a check"
    return f"no check does what {kind} does"


def _filled(template: str, variables: dict[str, Any]) -> str | None:
    """`{{ name }}` filled in from the vars; None when the template needs more than that."""

    def value_of(match: re.Match[str]) -> str:
        found = variables.get(match.group(1))
        return match.group(0) if isinstance(found, dict | list) else js_string(found)

    missing = [name for name in _VARIABLE.findall(template) if name not in variables]
    filled = _VARIABLE.sub(value_of, template)
    return None if missing or _TEMPLATE.search(filled) else filled


def _text(base: str, value: Any, inverse: bool) -> Mapped | str:
    kind = "output_not_contains" if inverse else "output_contains"
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return f"{base} needs a text value"
    text = js_string(value)
    named = f"not-{base}" if inverse else base
    if not text:
        return "an empty value: promptfoo finds it in every output"
    if base == "icontains":
        return Mapped([{"type": kind, "value": text}], f"{kind} (case-insensitive, as {named})")
    if text.casefold() == text == text.upper():
        # No letter with case: matching without case finds exactly what promptfoo finds.
        return Mapped([{"type": kind, "value": text}], kind)
    pattern = "(?-i)" + literal_pattern(text)
    error = regex_compile_error(pattern)
    if error is not None:
        return f"a case-sensitive match needs a pattern, and this one cannot be used: {error}"
    check = {"type": kind, "value": pattern, "regex": True}
    return Mapped([check], f"{kind} (a case-sensitive pattern, as promptfoo's {named})")


def literal_pattern(text: str) -> str:
    """A pattern matching exactly the text (only RE2's special characters escaped)."""
    return "".join("\\" + char if char in _SPECIAL else char for char in text)


_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def _regex(value: Any, inverse: bool) -> Mapped | str:
    kind = "output_not_contains" if inverse else "output_contains"
    if not isinstance(value, str) or not value:
        return "regex needs a pattern"
    pattern = "(?-i)" + value  # JavaScript's RegExp is case-sensitive unless told otherwise
    error = regex_compile_error(pattern)
    if error is not None:
        return f"RE2 cannot run this JavaScript pattern: {error}"
    return Mapped([{"type": kind, "value": pattern, "regex": True}], f"{kind} (RE2 pattern)")


def _json(base: str, value: Any) -> Mapped | str:
    if base == "contains-json":
        return _contains_json(value)
    if value is None or value == "":
        return Mapped([{"type": "output_valid_json"}], "output_valid_json")
    schema = _schema(value)
    if schema is None:
        return f"{base} needs a JSON Schema (an object) as its value"
    check = {"type": "output_matches_schema", "schema": schema}
    return Mapped([check], "output_matches_schema (JSON Schema 2020-12)")


def _contains_json(value: Any) -> Mapped | str:
    """promptfoo finds a JSON object anywhere in the reply; ours needs the reply to be one."""
    how = "output_matches_schema (stricter: the whole reply must be a JSON object, where "
    how += "promptfoo finds one anywhere in it)"
    if value is None or value == "":
        return Mapped([{"type": "output_matches_schema", "schema": _OBJECT}], how)
    schema = _schema(value)
    if schema is None:
        return "contains-json needs a JSON Schema (an object) as its value"
    check = {"type": "output_matches_schema", "schema": {"allOf": [_OBJECT, schema]}}
    return Mapped([check], how)


_OBJECT = {"type": "object"}


def _schema(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:  # promptfoo reads a text schema as YAML (JSON is YAML)
            value = load_yaml(value)
        except YamlProblem:
            return None
    return value if isinstance(value, dict) else None


def _equals(value: Any) -> Mapped | str:
    if isinstance(value, dict | list):
        # promptfoo compares a JSON value with the parsed output: JSON Schema's const does.
        const = {"type": "output_matches_schema", "schema": {"const": value}}
        return Mapped([const], "output_matches_schema (const: the parsed reply equals it)")
    if value is None:
        return "equals needs a value"
    check: dict[str, Any] = {
        "type": "output_equals",
        "value": js_string(value),
        "ignore_case": False,
        "trim": False,
    }
    return Mapped([check], "output_equals (exactly: case and whitespace count)")


def _judge(base: str, value: Any) -> Mapped | str:
    criteria = value if isinstance(value, list) else [value]
    if not criteria or not all(isinstance(c, str) and c.strip() for c in criteria):
        return f"{base} needs its criteria as text"
    checks = [{"type": "llm_judge", "criterion": criterion} for criterion in criteria]
    return Mapped(checks, "llm_judge (your project's AI judge)")


def _latency(threshold: Any) -> Mapped | str:
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or threshold < 0:
        return "latency needs a threshold in milliseconds"
    if not math.isfinite(threshold):
        return "latency needs a finite threshold"
    # Whole milliseconds: a latency at most 1500.5 ms is one at most 1500 ms.
    ms = math.floor(threshold)
    return Mapped([{"type": "latency_below", "ms": ms}], f"latency_below {ms} ms")


def _losses(base: str, assertion: dict[str, Any]) -> list[tuple[str, str]]:
    """Parts of an imported assert that no check keeps."""
    losses: list[tuple[str, str]] = []
    weight = assertion.get("weight")
    if weight is not None and weight != 1:
        losses.append(("weight", "every check counts the same in a case's score"))
    if assertion.get("metric") is not None:
        losses.append(("metric", "checks have no metric name"))
    if assertion.get("threshold") is not None and base != "latency":
        losses.append(("threshold", "the check passes or fails; no score threshold applies"))
    for field in ("provider", "rubricPrompt"):
        if assertion.get(field) is not None:
            losses.append((field, "your project's AI judge grades it"))
    return losses
