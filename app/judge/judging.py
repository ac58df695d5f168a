"""The AI judge in a run: which verdicts a case waits for, and getting them (cache, repeats).

A case whose checks need the judge is stored at once with a provisional grade (its judge checks
not graded, "waiting for the AI judge") and `judge_pending`; a judge chunk then asks the judge,
re-grades the case with the verdicts, and replaces the provisional grade. Without a configured
judge no call is ever made: those checks are not graded, saying so, and never pass.

The API needs only this module, which loads no model SDK (that costs a process about 77 MB);
asking the judge lives in calls, which only workers import.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentlasso.domain.grades import JudgeVerdict
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import Answer, verdicts_needed

NO_JUDGE = (
    "no judge is configured (set ANTHROPIC_API_KEY on the server, or the project's own key in "
    "its judge settings)"
)
WAITING = "waiting for the AI judge"


def immediate_verdicts(
    content: TestCaseContent, answer: Answer, judge_configured: bool
) -> tuple[Mapping[str, JudgeVerdict], bool]:
    """Verdicts to grade with now, and whether the case must wait for the judge."""
    requests = verdicts_needed(content, answer)
    if not requests:
        return {}, False
    reason = WAITING if judge_configured else NO_JUDGE
    unavailable = JudgeVerdict.unavailable(reason)
    return {request.check_id: unavailable for request in requests}, judge_configured
