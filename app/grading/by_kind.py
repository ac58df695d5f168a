"""Grading either kind of case: a single-turn case on its observation, a conversation on how
it was played. Callers that hold a reply of either kind go through here."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentlasso.domain.conversations import PlayedConversation
from agentlasso.domain.grades import CaseResult, DeclaredTools, JudgeVerdict, Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.case import grade_case, never_out_of_time
from agentlasso.grading.conversation import conversation_judge_requests, grade_conversation
from agentlasso.grading.judge_checks import JudgeRequest, judge_requests

# What an agent did on a case: one observation, or a whole played conversation.
Answer = Observation | PlayedConversation


def grade_answer(
    content: TestCaseContent,
    answer: Answer,
    verdicts: Mapping[str, JudgeVerdict],
    out_of_time: Callable[[], bool] = never_out_of_time,
    declared_tools: DeclaredTools | None = None,
) -> CaseResult:
    """The case's grade, whichever its kind."""
    if isinstance(answer, PlayedConversation):
        return grade_conversation(content, answer, verdicts, out_of_time, declared_tools)
    return grade_case(content, answer, verdicts, out_of_time, declared_tools)


def verdicts_needed(content: TestCaseContent, answer: Answer) -> tuple[JudgeRequest, ...]:
    """The judge verdicts grading this answer needs."""
    if isinstance(answer, PlayedConversation):
        return conversation_judge_requests(content, answer)
    return judge_requests(content, answer)
