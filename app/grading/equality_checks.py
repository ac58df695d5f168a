"""The check that the reply equals a value: by default caselessly (Unicode case folding, as
plain-text checks match) and with the whitespace around both sides trimmed."""

from __future__ import annotations

from agentlasso.domain.checks import OutputEquals
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.excerpts import REPLY_CHARS, quoted
from agentlasso.grading.outcomes import decided


def grade_output_equals(check: OutputEquals, context: GradingContext) -> CheckResult:
    """Passes when the reply, as the check says to compare it, equals the value."""
    reply, value = _compared(context.reply, check), _compared(check.value, check)
    expected = quoted(check.value)
    if reply == value:
        return decided(check, "output_equals", True, f"The reply equals {expected}.")
    detail = f"The reply does not equal {expected}: it was {quoted(context.reply, REPLY_CHARS)}"
    at = _first_difference(reply, value)
    if at is not None and len(context.reply) > REPLY_CHARS:
        # The quote is cut short: say where to look.
        detail += f" (they differ from character {at + 1})"
    return decided(check, "output_equals", False, detail + "." + _hint(context.reply, check))


def _compared(text: str, check: OutputEquals) -> str:
    """The text as the check compares it."""
    if check.trim:
        text = text.strip()
    return text.casefold() if check.ignore_case else text


def _first_difference(reply: str, value: str) -> int | None:
    """Where two compared texts first differ, when they share a start worth pointing past."""
    shared = next((i for i, (a, b) in enumerate(zip(reply, value, strict=False)) if a != b), None)
    if shared is None:
        shared = min(len(reply), len(value))
    return shared if shared > 0 else None


def _hint(reply: str, check: OutputEquals) -> str:
    """What else to try, when only the case or the surrounding whitespace differs."""
    if not check.trim and reply.strip() == check.value.strip():
        return " Only the whitespace around it differs (trim is off)."
    if not check.ignore_case and reply.strip().casefold() == check.value.strip().casefold():
        return " Only the letter case differs (ignore_case is off)."
    return ""
