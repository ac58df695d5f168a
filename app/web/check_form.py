"""One check as the rubric editor's form shows it, and back: the same fields whether the check
is the case's own (`checks-N-...`) or a conversation turn's (`turns-T-checks-N-...`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from agentlasso.domain.checks import ABOUT, PRODUCT_NAMES, WRITTEN_FIELDS, About, CheckType


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


def check_form(fields: dict[str, Any]) -> CheckForm:
    """The form showing a stored check (its builtins)."""
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


def check_payload(check: CheckForm) -> dict[str, Any]:
    """The check as it is written through the API."""
    payload: dict[str, Any] = {"type": check.type, "severity": check.severity}
    if check.id:
        payload["id"] = check.id
    for field in WRITTEN_FIELDS[check.type]:
        payload[field] = FIELD_READERS[field](check)
    return payload
