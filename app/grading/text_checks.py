"""Checks on the reply's text: plain text matched caselessly, or an RE2 regular expression."""

from __future__ import annotations

from agentlasso.domain.checks import OutputContains, OutputNotContains
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import REPLY_CHARS, around, quoted
from agentlasso.grading.folding import find_folded
from agentlasso.grading.outcomes import decided, not_graded
from agentlasso.grading.patterns import MAX_SEARCH_COST, compile_pattern, search, search_cost

TextCheck = OutputContains | OutputNotContains


class _NotRun:
    """A regular expression that was not run, and why: the check is not graded."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def grade_output_contains(check: OutputContains, context: GradingContext) -> CheckResult:
    """Passes when the text (caseless) or the pattern appears in the reply."""
    found = _find(check, context, want_span=False)
    if isinstance(found, _NotRun):
        return not_graded(check.id or "", check.severity, found.reason, "output_contains")
    if isinstance(found, str):
        return decided(check, "output_contains", False, found)
    value = quoted(check.value)
    if found is not None:
        verb = "matches the pattern" if check.regex else "contains"
        return decided(check, "output_contains", True, f"The reply {verb} {value}.")
    missing = (
        f"The pattern {value} did not match the reply"
        if check.regex
        else f"{value} was not found in the reply"
    )
    return decided(check, "output_contains", False, _missing(missing, context.reply))


def grade_output_not_contains(check: OutputNotContains, context: GradingContext) -> CheckResult:
    """Passes when neither the text (caseless) nor the pattern appears in the reply."""
    found = _find(check, context, want_span=True)
    if isinstance(found, _NotRun):
        return not_graded(check.id or "", check.severity, found.reason, "output_not_contains")
    if isinstance(found, str):
        return decided(check, "output_not_contains", False, found)
    value = quoted(check.value)
    if found is None:
        verb = "does not match the pattern" if check.regex else "does not contain"
        return decided(check, "output_not_contains", True, f"The reply {verb} {value}.")
    what = f"Forbidden pattern {value} matched" if check.regex else f"Forbidden {value} found"
    return decided(check, "output_not_contains", False, f"{what}: {_excerpt(context.reply, found)}")


def _find(
    check: TextCheck, context: GradingContext, *, want_span: bool
) -> tuple[int, int] | str | _NotRun | None:
    """The span of the first occurrence, None when absent, the compile error's detail, or why
    the search was not run."""
    if not check.regex:
        if not want_span:
            # Mapping folded positions back costs a pass over the reply; a pass needs none.
            return (0, 0) if check.value.casefold() in context.folded_reply() else None
        return find_folded(context.reply, context.folded_reply(), check.value)
    if context.out_of_time():
        return _NotRun("Not run: the time for grading this request ran out before this check.")
    regex, error = compile_pattern(check.value)
    if error is not None:
        return f"Invalid regular expression {quoted(check.value)}: {error}."
    reply = context.encoded_reply()
    cost = search_cost(regex, reply)
    if cost > MAX_SEARCH_COST:
        return _NotRun(_too_costly(regex.programsize, len(reply)))
    return search(regex, reply)


def _too_costly(program_size: int, reply_bytes: int) -> str:
    return (
        f"Not run: the pattern ({program_size:,} instructions) over this reply "
        f"({reply_bytes:,} bytes) could take longer than a search may; a simpler pattern "
        "would run."
    )


def _excerpt(reply: str, span: tuple[int, int]) -> str:
    """The match with its surroundings, or a note when it matched an empty reply."""
    return around(reply, *span) if reply else "(the reply is empty)."


def _missing(what: str, reply: str) -> str:
    """Why a wanted text is missing, with the start of the reply to compare against."""
    if not reply:
        return f"{what}, which is empty."
    return f"{what}: {quoted(reply, REPLY_CHARS)}."
