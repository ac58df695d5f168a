"""Older test cases without a checks list: `evaluation_criteria_json` read as checks.

- `expected_tool_calls` (tool names, or objects with a `name`): one critical `tool_called` each.
- `guardrails` (strings): one critical plain-text `output_not_contains` each.
- `semantic_guardrails`, `negative_constraints` (sentences): free-text rubric items, listed as
  not graded and never guessed at with keyword matching. Blank sentences are skipped.

Nothing here raises on malformed criteria. A single string where a list belongs is read as a
list of one; null or an empty list means nothing. Anything else that cannot be read (a number
where a tool name belongs, an unknown key holding a value) becomes an `unreadable_criterion`
item, so a case never silently loses part of what it asked for.
"""

from __future__ import annotations

import msgspec

from agentlasso.domain.checks import Check, OutputNotContains, ToolCalled, assign_check_ids
from agentlasso.domain.grades import UngradedItem
from agentlasso.grading.excerpts import shorten

_SOURCE = "evaluation_criteria_json"
_FREE_TEXT_KEYS = ("semantic_guardrails", "negative_constraints")
_KNOWN_KEYS = frozenset({"expected_tool_calls", "guardrails", *_FREE_TEXT_KEYS})
_FREE_TEXT_REASON = (
    "Free-text rubric items are not graded; turn it into an llm_judge check to grade it."
)


def criteria_checks(criteria: object) -> tuple[tuple[Check, ...], tuple[UngradedItem, ...]]:
    """The checks and the ungraded items an evaluation_criteria_json stands for."""
    if criteria is None:
        return (), ()
    if not isinstance(criteria, dict):
        return (), (_unreadable(_SOURCE, criteria, "expected an object of criteria"),)
    checks: list[Check] = []
    items: list[UngradedItem] = []
    for index, entry in _entries(criteria, "expected_tool_calls", items):
        _read_tool(entry, f"{_SOURCE}.expected_tool_calls[{index}]", checks, items)
    for index, entry in _entries(criteria, "guardrails", items):
        _read_guardrail(entry, f"{_SOURCE}.guardrails[{index}]", checks, items)
    for key in _FREE_TEXT_KEYS:
        for index, entry in _entries(criteria, key, items):
            _read_free_text(entry, f"{_SOURCE}.{key}[{index}]", items)
    items.extend(_unknown_keys(criteria))
    return assign_check_ids(tuple(checks)), tuple(items)


def _entries(
    criteria: dict[object, object], key: str, items: list[UngradedItem]
) -> list[tuple[int, object]]:
    """The indexed entries under a key; a lone string is a list of one, other non-lists unread."""
    value = criteria.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        items.append(_unreadable(f"{_SOURCE}.{key}", value, "expected a list"))
        return []
    return list(enumerate(value))


def _read_tool(entry: object, source: str, checks: list[Check], items: list[UngradedItem]) -> None:
    """A tool name (or an object with one) as a critical tool_called check."""
    name = entry.get("name") if isinstance(entry, dict) else entry
    if isinstance(name, str) and name:
        checks.append(ToolCalled(tool=name))
    else:
        items.append(_unreadable(source, entry, 'expected a tool name or an object with "name"'))


def _read_guardrail(
    entry: object, source: str, checks: list[Check], items: list[UngradedItem]
) -> None:
    """A forbidden text as a critical plain-text output_not_contains check."""
    if isinstance(entry, str) and entry.strip():
        checks.append(OutputNotContains(value=entry))
    else:
        items.append(
            _unreadable(source, entry, "expected a non-empty text the reply must not contain")
        )


def _read_free_text(entry: object, source: str, items: list[UngradedItem]) -> None:
    """A plain-English rubric sentence, listed as not graded."""
    text = _as_text(entry)
    if text.strip():
        items.append(
            UngradedItem(
                kind="free_text_rubric_item", source=source, text=text, reason=_FREE_TEXT_REASON
            )
        )


def _unknown_keys(criteria: dict[object, object]) -> list[UngradedItem]:
    """Keys holding something AgentLasso does not read, listed rather than dropped."""
    return [
        _unreadable(f"{_SOURCE}.{key}", value, "not a criterion AgentLasso reads")
        for key, value in criteria.items()
        if key not in _KNOWN_KEYS and value not in (None, "", [], {})
    ]


def _unreadable(source: str, value: object, reason: str) -> UngradedItem:
    """An ungraded item for a criterion that could not be read, and why."""
    return UngradedItem(
        kind="unreadable_criterion",
        source=source,
        text=shorten(_as_text(value), 200),
        reason=reason,
    )


def _as_text(value: object) -> str:
    """A value as text for a person: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode("utf-8")
    except (TypeError, ValueError):
        return repr(value)
