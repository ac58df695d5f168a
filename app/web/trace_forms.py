"""The Traces pages' forms: the list's filters, and Add to dataset for one trace or several.

Add to dataset offers each trace's own checks as checkboxes, all ticked; the form sends back
which were kept by value (the check itself, as JSON), and the server offers them again from
the stored trace, so a posted form can keep or drop offered checks but never invent one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import msgspec

from agentlasso.db.trace_lists import TraceFilters
from agentlasso.db.traces import TraceRow
from agentlasso.domain.checks import Check
from agentlasso.traces.cases import case_input
from agentlasso.web.forms import text

# One page of the list: Add to dataset takes at most this many traces at once.
MAX_TRACES_ADDED = 50
# The API's limit on a case's expected output.
EXPECTED_OUTPUT_MAX_CHARS = 100_000
SEARCH_MAX_CHARS = 500
FILTER_NAMES = ("q", "tool", "errors", "after", "before")


class OfferedCheck(msgspec.Struct, frozen=True, kw_only=True):
    """A check offered from a trace's tool calls: its checkbox's value and label."""

    key: str
    label: str
    check: Check


class TraceChoice(msgspec.Struct, kw_only=True):
    """One trace in the Add to dataset form, as offered or as the person left it."""

    index: int
    trace: TraceRow
    offered: list[OfferedCheck]
    ticked: set[str]
    use_reply: bool = False
    expected_output: str = ""

    @property
    def addable(self) -> bool:
        """Whether a case can start from it (it recorded an input)."""
        return case_input(self.trace.input) is not None

    @property
    def field(self) -> str:
        """The prefix of its fields in the form."""
        return f"trace-{self.index}"

    def kept_checks(self) -> tuple[Check, ...]:
        """The offered checks left ticked, in the order they were offered."""
        return tuple(offer.check for offer in self.offered if offer.key in self.ticked)

    def expected(self) -> str | None:
        """The expected output, only when the person chose to use it."""
        return self.expected_output if self.use_reply else None


class ListFilters(msgspec.Struct, frozen=True, kw_only=True):
    """The list's filters: as the query asked (shown back), as applied, and what was wrong."""

    shown: dict[str, str]
    applied: TraceFilters
    errors: dict[str, str]

    @property
    def narrows(self) -> bool:
        """Whether any filter is set."""
        return any(self.shown.values())

    def query(self) -> str:
        """The filters as a query string, for the next page's link."""
        return urlencode({name: value for name, value in self.shown.items() if value})


def list_filters(query: Mapping[str, Any]) -> ListFilters:
    """The filters a list page's query asks for; a time that cannot be read is left out and
    named by its field."""
    shown = {name: str(query.get(name) or "") for name in FILTER_NAMES}
    errors: dict[str, str] = {}
    after = _moment(shown["after"], "after", errors)
    before = _moment(shown["before"], "before", errors)
    if after and before and before <= after:
        errors["before"] = "Must be later than Started after."
        before = None
    applied = TraceFilters(
        text=shown["q"].strip()[:SEARCH_MAX_CHARS] or None,
        tool=shown["tool"][:256] or None,
        errors_only=shown["errors"] == "on",
        started_after=after,
        started_before=before,
    )
    return ListFilters(shown=shown, applied=applied, errors=errors)


def _moment(raw: str, name: str, errors: dict[str, str]) -> datetime | None:
    """A date and time as a datetime-local field sends it, read as UTC (as the list shows
    times)."""
    if not raw.strip():
        return None
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        errors[name] = "Enter a date and time in UTC, as 2026-12-01T10:00."
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def offered_checks(checks: Sequence[Check]) -> list[OfferedCheck]:
    """The checks a trace offers, each with its checkbox's value and label."""
    return [
        OfferedCheck(key=msgspec.json.encode(check).decode(), label=check_label(check), check=check)
        for check in checks
    ]


def check_label(check: Check) -> str:
    """A check as its checkbox reads: its product name, what it names, its severity."""
    detail = check.detail()
    name = f"{check.about.name}: {detail}" if detail else check.about.name
    return f"{name} ({check.severity})"


def offered_choice(index: int, trace: TraceRow, checks: Sequence[Check]) -> TraceChoice:
    """A trace as the form first offers it: every check ticked, the reply as a draft not used."""
    offered = offered_checks(checks)
    return TraceChoice(
        index=index,
        trace=trace,
        offered=offered,
        ticked={offer.key for offer in offered},
        expected_output=trace.output or "",
    )


def posted_choice(
    form: Any, index: int, trace: TraceRow, checks: Sequence[Check], errors: dict[str, str]
) -> TraceChoice:
    """A trace's part of the posted form; its problems noted by field."""
    choice = offered_choice(index, trace, checks)
    choice.ticked = {value for value in form.getall(f"{choice.field}-checks", []) if value}
    choice.use_reply = form.get(f"{choice.field}-use_reply") == "on"
    choice.expected_output = text(form, f"{choice.field}-expected_output")
    field = f"{choice.field}-expected_output"
    if choice.use_reply and not choice.expected_output.strip():
        errors[field] = "Write the expected output, or untick “use the reply”."
    elif choice.use_reply and len(choice.expected_output) > EXPECTED_OUTPUT_MAX_CHARS:
        errors[field] = f"At most {EXPECTED_OUTPUT_MAX_CHARS:,} characters."
    if not choice.addable:
        errors[""] = "A trace that recorded no input was sent: it is listed below, not added."
    return choice


def posted_trace_ids(form: Mapping[str, Any]) -> list[str]:
    """The traces the posted form is about, in its order (`trace-0`, `trace-1`, ...)."""
    ids: list[str] = []
    for index in range(MAX_TRACES_ADDED):
        trace_id = text(form, f"trace-{index}").strip()
        if not trace_id:
            break
        ids.append(trace_id)
    return ids


def chosen_trace_ids(values: Sequence[str]) -> list[str]:
    """The traces ticked on the list, each once, in the list's order."""
    return list(dict.fromkeys(value.strip().lower() for value in values if value.strip()))
