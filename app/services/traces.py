"""Traces: accepting OTLP requests, reading traces back, and making test cases from them."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from uuid import UUID

import msgspec

from agentlasso.config import Settings
from agentlasso.db import shown_spans, trace_lists
from agentlasso.db import trace_rules as rule_rows
from agentlasso.db import traces as trace_rows
from agentlasso.db.trace_lists import TraceFilters
from agentlasso.db.traces import TraceRow
from agentlasso.domain.audit import Caller
from agentlasso.domain.checks import Check
from agentlasso.domain.test_cases import ContentWarning, TestCase, TestCaseContent
from agentlasso.domain.trace_rules import Evaluation
from agentlasso.errors import (
    BodyTooLarge,
    Conflict,
    FieldError,
    InvalidInput,
    MalformedBody,
    NotFound,
    UnsupportedMediaType,
)
from agentlasso.services import audit
from agentlasso.services.platform import Platform
from agentlasso.services.test_cases import create_test_case
from agentlasso.services.trace_conversations import make_conversation_case, trace_turns
from agentlasso.traces.cases import case_input, suggested_checks
from agentlasso.traces.limits import LimitExceeded
from agentlasso.traces.otlp import (
    Encoding,
    Intake,
    OtlpError,
    OtlpTooLarge,
    check,
    decompressed,
    encoding_of,
)
from agentlasso.traces.spans import Span
from agentlasso.traces.summary_cuts import cut_mark
from agentlasso.traces.trace_limits import trace_limits

# A request over this size is checked on a thread, leaving the event loop to other requests
# (a few KB can hold a few thousand values); two at a time, so that a flood of checks never
# crowds the event loop out of the interpreter.
_CHECK_OFF_LOOP_BYTES = 4 * 1024
_CHECKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="otlp-check")
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
# The cursor continues after (started_at in microseconds, trace id).
TRACE_CURSOR_PATTERN = r"^(\d{1,17})\.([0-9a-f]{32})$"
_CURSOR = re.compile(TRACE_CURSOR_PATTERN)
# A trace's page and its API answer carry its first spans; span_count says how many it has.
SPANS_SHOWN = 1_000
NO_TRACE = "No trace with this id in your project (or it is past the project's retention)."


class TraceView(msgspec.Struct, frozen=True, kw_only=True):
    """One trace with its spans, and the test cases made from it."""

    trace: TraceRow
    spans: list[Span]
    cases: list[tuple[UUID, UUID, str]]
    # Each trace rule's latest grade of the trace.
    evaluations: list[Evaluation] = []


class Suggestions(msgspec.Struct, frozen=True, kw_only=True):
    """What a case from a trace could also take: the recorded reply as its expected output."""

    expected_output: str | None


async def accept_otlp(
    platform: Platform,
    project_id: UUID,
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
) -> Intake:
    """Check an OTLP request and keep it for a worker to read; what was accepted and refused."""
    settings = platform.settings
    try:
        encoding = encoding_of(content_type)
    except OtlpError as exc:
        raise UnsupportedMediaType(str(exc), header="content-type") from exc
    try:
        plain_bytes, intake = await _checked(body, content_encoding, encoding, settings)
    except OtlpTooLarge as exc:
        raise BodyTooLarge(_sentence(exc)) from exc
    except LimitExceeded as exc:
        raise (MalformedBody if exc.too_deep else BodyTooLarge)(_sentence(exc)) from exc
    except OtlpError as exc:
        raise MalformedBody(_sentence(exc)) from exc
    if intake.accepted:
        gzipped = (content_encoding or "").strip().lower() == "gzip"
        await trace_rows.add_batch(
            platform.pool, project_id, encoding.value, gzipped, body, (intake.accepted, plain_bytes)
        )
    return intake


def _plain_limit(settings: Settings, encoding: Encoding) -> tuple[int, str]:
    """The most bytes a request may take once decompressed, and the setting that says so:
    JSON builds an object per value from far fewer bytes than protobuf needs."""
    if encoding is Encoding.JSON:
        return settings.trace_max_json_body_bytes, "AGENTLASSO_TRACE_MAX_JSON_BODY_BYTES"
    return settings.trace_max_body_bytes, "AGENTLASSO_TRACE_MAX_BODY_BYTES"


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return text[:1].upper() + text[1:] + "."


async def _checked(
    body: bytes, content_encoding: str | None, encoding: Encoding, settings: Settings
) -> tuple[int, Intake]:
    """The body's size once decompressed, and what it holds."""
    if len(body) <= _CHECK_OFF_LOOP_BYTES and (content_encoding or "identity") == "identity":
        return _read(body, content_encoding, encoding, settings)
    # Bounded by the limits, and on a thread: inflating lets go of the interpreter, and the
    # walk does every few milliseconds, so other requests go on meanwhile.
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_CHECKERS, _read, body, content_encoding, encoding, settings)


def _read(
    body: bytes, content_encoding: str | None, encoding: Encoding, settings: Settings
) -> tuple[int, Intake]:
    plain = decompressed(body, content_encoding, *_plain_limit(settings, encoding))
    limits = trace_limits(settings)
    return len(plain), check(plain, encoding, limits, settings.trace_max_spans_per_request)


async def list_traces(
    platform: Platform, project_id: UUID, filters: TraceFilters, cursor: str | None, limit: int
) -> tuple[list[TraceRow], str | None]:
    """A page of the project's traces, newest first, and the cursor to the next one."""
    rows, more = await trace_lists.list_traces(
        platform.pool, project_id, filters, decode_cursor(cursor), limit
    )
    if not more or not rows:
        return rows, None
    return rows, encode_cursor(rows[-1].started_at, rows[-1].trace_id)


def encode_cursor(started_at: datetime, trace_id: str) -> str:
    """The cursor that continues after this trace."""
    micros = round(started_at.timestamp() * 1_000_000)
    return f"{micros}.{trace_id}"


def decode_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    """Where a cursor continues after; InvalidInput naming `cursor` when it is not one."""
    if not cursor:
        return None
    found = _CURSOR.match(cursor)
    if found is None:
        detail = "Use the next_cursor of the previous page."
        raise InvalidInput(
            "The cursor is not valid.", [FieldError(parameter="cursor", detail=detail)]
        )
    started_at = datetime.fromtimestamp(int(found[1]) / 1_000_000, UTC)
    return started_at, found[2]


async def get_trace(platform: Platform, project_id: UUID, trace_id: str) -> TraceView:
    """A trace with its spans in start order and the cases made from it."""
    trace = await get_trace_summary(platform, project_id, trace_id)
    chars = platform.settings.trace_max_summary_chars
    spans = await shown_spans.trace_spans(
        platform.pool, project_id, trace_id, SPANS_SHOWN, chars, cut_mark(chars)
    )
    cases = await trace_rows.cases_from_trace(platform.pool, project_id, trace_id)
    evaluations = await rule_rows.evaluations_of_trace(platform.pool, project_id, trace.trace_id)
    return TraceView(trace=trace, spans=spans, cases=cases, evaluations=evaluations)


async def get_trace_summary(platform: Platform, project_id: UUID, trace_id: str) -> TraceRow:
    """A trace's summary alone (no spans); NotFound when it is not the project's."""
    return (await trace_summaries(platform, project_id, [trace_id]))[0]


async def trace_summaries(
    platform: Platform, project_id: UUID, trace_ids: Sequence[str]
) -> list[TraceRow]:
    """Traces' summaries in the order asked, read at once; NotFound when one is not the
    project's (or has expired)."""
    wanted = [trace_id.lower() for trace_id in trace_ids]
    if not all(TRACE_ID.match(trace_id) for trace_id in wanted):
        raise NotFound(NO_TRACE)
    found = await trace_rows.get_traces(platform.pool, project_id, wanted)
    if any(trace_id not in found for trace_id in wanted):
        raise NotFound(NO_TRACE)
    return [found[trace_id] for trace_id in wanted]


def checks_offered(trace: TraceRow) -> tuple[Check, ...]:
    """The checks a case from this trace starts with unless others are given (a trace of
    several user turns offers its checks by turn instead)."""
    if trace_turns(trace):
        return ()
    return suggested_checks([str(call.get("name") or "") for call in trace.tool_calls])


async def make_case_from_trace(
    platform: Platform,
    project_id: UUID,
    trace: TraceRow,
    dataset_id: UUID,
    *,
    checks: tuple[Check, ...] | None = None,
    expected_output: str | None = None,
    turn_checks: Sequence[Sequence[Check]] | None = None,
) -> tuple[TestCase, list[ContentWarning], Suggestions]:
    """A new case in the dataset with the trace's input, linked to the trace (one the caller
    read with get_trace_summary or trace_summaries): a conversation case when its input holds
    several user messages, each turn with the checks given (else those it offers)."""
    suggestions = Suggestions(expected_output=trace.output)
    turns = trace_turns(trace)
    if turns:
        case, warnings = await make_conversation_case(
            platform, project_id, dataset_id, turns, checks=checks, turn_checks=turn_checks,
            expected_output=expected_output,
            description=f"From trace {trace.name or trace.trace_id}",
        )  # fmt: skip
        return case, warnings, suggestions
    made_input = case_input(trace.input)
    if made_input is None:
        raise Conflict("This trace recorded no input for the agent, so no case can start from it.")
    content = TestCaseContent(
        input=made_input,
        checks=checks_offered(trace) if checks is None else checks,
        expected_output=expected_output,
        description=f"From trace {trace.name or trace.trace_id}"[:500],
    )
    case, warnings = await create_test_case(
        platform, project_id, dataset_id, content, source_trace_id=trace.trace_id
    )
    return case, warnings, suggestions


async def retention_days(platform: Platform, project_id: UUID) -> int:
    """How many days the project keeps a trace after it arrives."""
    return await trace_rows.retention_days(platform.pool, project_id)


async def set_retention_days(
    platform: Platform, project_id: UUID, days: int, caller: Caller
) -> int:
    """Keep the project's traces this many days; older ones go within a minute or so."""
    async with platform.pool.acquire() as connection, connection.transaction():
        before = await trace_rows.set_retention_days(connection, project_id, days)
        if before != days:
            await audit.record(
                connection, project_id, caller, "trace_retention.changed",
                before=before, after=days,
            )  # fmt: skip
    return days


async def recent_tool_names(platform: Platform, project_id: UUID) -> list[str]:
    """The tools the project's recent traces called: the choices of the tool filter."""
    return await trace_rows.recent_tool_names(platform.pool, project_id)
