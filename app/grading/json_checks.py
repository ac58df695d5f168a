"""The check that the reply, whitespace trimmed, parses as JSON."""

from __future__ import annotations

import json

import msgspec

from agentlasso.domain.checks import OutputValidJson
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.outcomes import decided


def grade_output_valid_json(check: OutputValidJson, context: GradingContext) -> CheckResult:
    """Passes when the trimmed reply is one JSON value (RFC 8259: no NaN or Infinity)."""
    error = json_error(context.reply)
    if error is None:
        return decided(check, "output_valid_json", True, "The reply is valid JSON.")
    return decided(check, "output_valid_json", False, f"The reply is not valid JSON: {error}.")


def may_be_json(trimmed: str) -> bool:
    """Whether trimmed text can start a JSON value: prose is told apart without raising."""
    return bool(trimmed) and trimmed[0] in _VALUE_STARTS


def json_error(reply: str) -> str | None:
    """Why the trimmed reply is not JSON, with its position in the untrimmed reply, or None."""
    trimmed = reply.strip()
    if not may_be_json(trimmed):
        # Python's parser says exactly this of text that cannot start a JSON value; a prose
        # reply, the usual failure, is answered without raising two exceptions.
        line, column = _untrimmed_position(reply, trimmed, 1, 1)
        return f"Expecting value at line {line} column {column}"
    try:
        # msgspec is the fast path; it accepts only strict JSON, so any reply it takes is valid.
        _FAST.decode(trimmed)
    except (msgspec.DecodeError, RecursionError):
        pass
    else:
        return None
    try:
        # Python's parser decides the rest (it takes `"\ud800"`, `1e999`) and words the errors.
        _STRICT.decode(trimmed)
    except json.JSONDecodeError as exc:
        line, column = _untrimmed_position(reply, trimmed, exc.lineno, exc.colno)
        return f"{exc.msg} at line {line} column {column}"
    except _NotJson as exc:
        return str(exc)
    except RecursionError:
        # Python's parser recurses per nesting level; a reply nested that deep is not graded
        # as JSON rather than crashing the worker.
        return "it is nested too deeply to parse"
    return None


_FAST = msgspec.json.Decoder()
# The characters a JSON value (or Python's NaN and Infinity, worded apart) can start with.
_VALUE_STARTS = frozenset('{["-0123456789tfnNI')


class _NotJson(ValueError):
    """A value Python's json accepts but JSON does not."""


def _reject_constant(name: str) -> object:
    """Refuse NaN, Infinity and -Infinity, which are not JSON."""
    raise _NotJson(f"{name} is not a JSON value")


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)


def _untrimmed_position(reply: str, trimmed: str, line: int, column: int) -> tuple[int, int]:
    """Shift a line and column in the trimmed reply to where they are in the reply as sent."""
    leading = reply[: len(reply) - len(reply.lstrip())]
    if not leading or not trimmed:
        return line, column
    breaks = leading.count("\n")
    if line == 1:
        column += len(leading) - (leading.rfind("\n") + 1)
    return line + breaks, column
