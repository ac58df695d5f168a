"""Grading a conversation: each turn's checks on that turn, the case's checks on the whole.

Contract section 13: a turn's checks see that turn's reply and calls; the case's tool checks
see every call in order, its text and JSON checks the final reply, its judge checks and the
expectation the transcript. After an agent error at turn k the checks of turns k and later
fail saying where and why it stopped; so do the case's checks, which describe a conversation
that never finished. How it ended never decides the verdict by itself: the checks do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from agentlasso.domain.checks import Check, LlmJudge, type_of
from agentlasso.domain.conversations import (
    ENDED_IN_WORDS,
    Message,
    PlayedConversation,
    TurnRecord,
    transcript,
)
from agentlasso.domain.grades import (
    CaseResult,
    CheckResult,
    DeclaredTools,
    JudgeVerdict,
    Observation,
    ToolCall,
)
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.case import (
    expectation_check,
    grade_checks,
    never_out_of_time,
    summarise,
)
from agentlasso.grading.context import GradingContext
from agentlasso.grading.judge_checks import EXPECTATION_ID, JudgeRequest
from agentlasso.grading.observations import observation_from_wire
from agentlasso.grading.outcomes import failed_as, not_graded
from agentlasso.grading.plan import CasePlan, expected_output, plan_case

_NO_VERDICTS: Mapping[str, JudgeVerdict] = {}


def grade_conversation(
    content: TestCaseContent,
    played: PlayedConversation,
    verdicts: Mapping[str, JudgeVerdict] = _NO_VERDICTS,
    out_of_time: Callable[[], bool] = never_out_of_time,
    declared_tools: DeclaredTools | None = None,
) -> CaseResult:
    """Grade a played conversation against its turns' checks and its own."""
    conversation = content.conversation
    assert conversation is not None, "a single-turn case is graded by grade_case"
    plan = plan_case(content)
    if played.not_graded_reason is not None:
        return _not_graded(content, plan, played.not_graded_reason)
    results: list[CheckResult] = []
    for number, turn in enumerate(conversation.turns, start=1):
        if turn.checks:
            context = _turn_context(number, played, verdicts, out_of_time, declared_tools)
            results += _grade_turn(number, turn.checks, played, context)
    stopped = stopped_by_error(played)
    if stopped is None:
        whole = whole_observation(played)
        context = GradingContext(whole, verdicts, out_of_time, declared_tools)
        results += grade_checks(plan.checks, context)
        if expected_output(content) is not None:
            results.append(expectation_check(content, context))
    else:
        results += [_unrun(check, stopped) for check in plan.checks]
        if expected_output(content) is not None:
            results.append(failed_as(EXPECTATION_ID, "llm_judge", "critical", stopped))
    causes = () if stopped is None else (stopped,)
    return summarise(tuple(results), plan, causes)


def _not_graded(content: TestCaseContent, plan: CasePlan, reason: str) -> CaseResult:
    """Every check not graded, with the reason: a conversation that could not be played out
    (the simulated user's model unavailable) is never passed. By the case rules of section 4,
    a critical check that could not be graded fails the case, so the gate counts it; with only
    minor checks the case is not graded."""
    conversation = content.conversation
    assert conversation is not None
    why = reason.strip().rstrip(".")
    detail = f"Not graded: {why}."
    checks = [
        msgspec.structs.replace(
            not_graded(c.id or "", c.severity, detail, type_of(type(c))), turn=n
        )
        for n, c in conversation.turn_checks()
    ] + [not_graded(c.id or "", c.severity, detail, type_of(type(c))) for c in plan.checks]
    if expected_output(content) is not None:
        checks.append(not_graded(EXPECTATION_ID, "critical", detail))
    cause = f"The conversation could not be played out: {why}."
    return summarise(tuple(checks), plan, (cause,))


def _turn_context(
    number: int,
    played: PlayedConversation,
    verdicts: Mapping[str, JudgeVerdict],
    out_of_time: Callable[[], bool],
    declared_tools: DeclaredTools | None,
) -> GradingContext | None:
    """What turn `number`'s checks see, or None when it never answered."""
    record = played.turns[number - 1] if number <= len(played.turns) else None
    if record is None or record.error is not None:
        return None
    return GradingContext(turn_observation(record), verdicts, out_of_time, declared_tools)


def _grade_turn(
    number: int,
    checks: tuple[Check, ...],
    played: PlayedConversation,
    context: GradingContext | None,
) -> list[CheckResult]:
    """One turn's checks on its reply and calls, or failed saying why the turn never ran."""
    if context is None:
        why = unreached(number, played)
        return [_unrun(check, why, number) for check in checks]
    return [
        msgspec.structs.replace(result, turn=number) for result in grade_checks(checks, context)
    ]


def _unrun(check: Check, detail: str, turn: int | None = None) -> CheckResult:
    result = failed_as(check.id or "", type_of(type(check)), check.severity, detail)
    return result if turn is None else msgspec.structs.replace(result, turn=turn)


def stopped_by_error(played: PlayedConversation) -> str | None:
    """`The conversation stopped at turn 3: <why>.` when an agent call failed, else None."""
    if played.ended_by != "error":
        return None
    failed = next((record for record in played.turns if record.error is not None), None)
    if failed is None:
        return "The conversation stopped on an agent error."
    why = failed.error.strip().rstrip(".") if failed.error else "the agent call failed"
    return f"The conversation stopped at turn {failed.turn}: {why}."


def unreached(number: int, played: PlayedConversation) -> str:
    """Why turn `number` has no reply to grade."""
    stopped = stopped_by_error(played)
    if stopped is not None:
        return stopped
    last = len(played.turns)
    how = ENDED_IN_WORDS[played.ended_by].rstrip(".").lower()
    return f"Turn {number} never ran: the conversation ended after turn {last} ({how})."


def turn_observation(record: TurnRecord) -> Observation:
    """What the agent said and did during one turn."""
    return observation_from_wire(
        record.actual_output,
        record.actual_tool_calls,
        agent_error=record.error,
        latency_ms=record.latency_ms,
    )


def whole_observation(played: PlayedConversation) -> Observation:
    """The final reply, every call of every turn in order (unreported when some turn left its
    calls unreported: a check cannot say a tool was never called then), each turn's latency."""
    final = played.turns[-1].actual_output if played.turns else None
    calls: list[ToolCall] = []
    unreadable: list[str] = []
    reported = bool(played.turns)
    for record in played.turns:
        turn = turn_observation(record)
        if turn.tool_calls is None:
            reported = False
            continue
        calls += turn.tool_calls
        unreadable += (f"turn {record.turn}: {problem}" for problem in turn.unreadable_tool_calls)
    return Observation(
        actual_output=final,
        tool_calls=tuple(calls) if reported else None,
        unreadable_tool_calls=tuple(unreadable),
        turn_latencies_ms=tuple(record.latency_ms for record in played.turns),
    )


def conversation_judge_requests(
    content: TestCaseContent, played: PlayedConversation
) -> tuple[JudgeRequest, ...]:
    """The verdicts grading this conversation needs: a turn's judge checks on its reply after
    the transcript before it, the case's on the final reply after the whole transcript; none
    for checks that fail without a judge (a turn never answered, a conversation cut short)."""
    conversation = content.conversation
    assert conversation is not None, "a single-turn case's requests come from judge_requests"
    messages = transcript(played.turns)
    requests: list[JudgeRequest] = []
    for number, turn in enumerate(conversation.turns, start=1):
        record = played.turns[number - 1] if number <= len(played.turns) else None
        if record is None or record.error is not None or record.actual_output is None:
            continue
        before = (
            *transcript(played.turns[: number - 1]),
            Message(role="user", content=record.user),
        )
        requests += _judge_requests_of(turn.checks, before, record.actual_output)
    final = whole_observation(played).actual_output
    if played.not_graded_reason is not None:
        return ()  # the conversation is not graded: no verdict is worth asking for
    if stopped_by_error(played) is None and final is not None:
        # The whole transcript but the final reply, which is the reply judged.
        before_final = messages[:-1]
        requests += _judge_requests_of(plan_case(content).checks, before_final, final)
        expected = expected_output(content)
        if expected is not None:
            requests.append(
                JudgeRequest(
                    check_id=EXPECTATION_ID,
                    kind="expectation",
                    criterion=expected,
                    evaluation_type=content.evaluation_type,
                    conversation_input=before_final,
                    conversation_reply=final,
                )
            )
    return tuple(requests)


def _judge_requests_of(
    checks: tuple[Check, ...], before: tuple[Message, ...], reply: str
) -> list[JudgeRequest]:
    return [
        JudgeRequest(
            check_id=check.id or "",
            kind="llm_judge",
            criterion=check.criterion,
            evaluation_type="BOOLEAN",
            examples=check.examples or (),
            conversation_input=before,
            conversation_reply=reply,
        )
        for check in checks
        if isinstance(check, LlmJudge)
    ]
