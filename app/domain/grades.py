"""What grading observes (the reply, the tool calls) and decides (checks, cases, the gate)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from agentlasso.domain.checks import CheckType, Severity

CheckStatus = Literal["passed", "failed", "not_graded"]
Outcome = Literal["passed", "failed", "not_graded"]
UngradedKind = Literal["free_text_rubric_item", "unreadable_criterion"]


class ToolCall(msgspec.Struct, frozen=True, gc=False):
    """One tool call the agent made; its arguments are compared only when a check lists them."""

    name: str
    # A JSON value: the decoded object when the agent sent a JSON string, else as sent.
    arguments: Any = None


# The input schemas of the tools an agent declares, by tool name (read from the agent's `tools`
# by declared_tools.py): what tool_args_valid validates calls against.
DeclaredTools = dict[str, Any]


class Observation(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the agent did and said on one case, as far as it was reported."""

    # None: the reply was not reported. "" is a reply (an empty one).
    actual_output: str | None = None
    # None: the tool calls were not reported. () is a report of no calls.
    tool_calls: tuple[ToolCall, ...] | None = None
    # Reported entries that could not be read as a tool call, each described for a person.
    unreadable_tool_calls: tuple[str, ...] = ()
    # Set when the platform's call to the agent failed: every check then fails with it.
    agent_error: str | None = None
    # How long the agent took to answer, in ms (None: not reported); a conversation's own
    # checks see each turn's instead, in turn order.
    latency_ms: int | None = None
    turn_latencies_ms: tuple[int | None, ...] | None = None


class JudgeVerdict(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An AI judge's answer for one check, or the reason there is none; supplied from outside."""

    passed: bool | None = None
    # 0 to 1 (the judge's 0 to 100 divided by 100); used by a SCORE expectation.
    score: float | None = None
    reasoning: str | None = None
    model: str | None = None
    # Set when there is no verdict: no judge configured, judge unreachable, unusable answer.
    not_graded_reason: str | None = None

    @classmethod
    def decided(
        cls, passed: bool, *, reasoning: str | None = None, model: str | None = None
    ) -> JudgeVerdict:
        """A yes/no verdict (llm_judge checks and BOOLEAN expectations)."""
        return cls(passed=passed, reasoning=reasoning, model=model)

    @classmethod
    def scored(
        cls, score: float, *, reasoning: str | None = None, model: str | None = None
    ) -> JudgeVerdict:
        """A 0 to 1 score (SCORE expectations)."""
        return cls(score=score, reasoning=reasoning, model=model)

    @classmethod
    def unavailable(cls, reason: str) -> JudgeVerdict:
        """No verdict, and why (the check will be not graded)."""
        return cls(not_graded_reason=reason)


class CheckResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One check's outcome: passed, failed or not graded, with a detail a person acts on."""

    id: str
    type: CheckType
    severity: Severity
    status: CheckStatus
    # None when not graded.
    passed: bool | None
    detail: str
    # Judge checks only: 1 or 0 for a yes/no verdict, the 0 to 1 score for a SCORE expectation.
    score: float | None = None
    reasoning: str | None = None
    # A conversation's turn check: the (1-based) turn it grades. Absent from every other check
    # result (UNSET is never encoded), so a single-turn case's results read as they always did.
    turn: int | msgspec.UnsetType = msgspec.UNSET


class UngradedItem(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Something a case asks for that is not a check (a free-text rubric item): never graded."""

    kind: UngradedKind
    # Where it came from, e.g. "evaluation_criteria_json.semantic_guardrails[0]".
    source: str
    text: str
    reason: str


class CaseResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One case's grade: its score, pass, whether it was graded, and each check's result."""

    score: float | None
    pass_fail: bool
    graded: bool
    partially_graded: bool
    judge_reasoning: str
    check_results: tuple[CheckResult, ...]
    ungraded_items: tuple[UngradedItem, ...] = ()

    @property
    def outcome(self) -> Outcome:
        """passed, failed or not_graded: the one word a list of results is filtered by."""
        if not self.graded:
            return "not_graded"
        return "passed" if self.pass_fail else "failed"


class RunCounts(msgspec.Struct, frozen=True, kw_only=True):
    """A run's counters, as a database keeps them; enough to decide the gate."""

    # Case results the run expects (test cases x trials).
    total: int
    # Case results received so far.
    done: int
    graded: int
    passed: int
    # Received but not graded because the case has no checks at all.
    no_checks: int = 0

    def __post_init__(self) -> None:
        """Refuse counters that contradict each other: a gate computed from them would lie."""
        if min(self.total, self.done, self.graded, self.passed, self.no_checks) < 0:
            raise ValueError("run counts must not be negative")
        if self.passed > self.graded or self.graded + self.no_checks > self.done:
            raise ValueError("run counts are inconsistent: passed <= graded <= done - no_checks")
        if self.done > self.total:
            raise ValueError("run counts are inconsistent: more results than cases")


class Gate(msgspec.Struct, frozen=True, kw_only=True):
    """The CI verdict on a run: its pass rate, whether it passes, and why not."""

    pass_rate: float | None
    ci_pass: bool
    ci_fail_reason: str | None


def reply_text(output: object) -> str | None:
    """The reply as text: a string as is, null as not reported, any other JSON value encoded."""
    if output is None or isinstance(output, str):
        return output
    try:
        return msgspec.json.encode(output).decode("utf-8")
    except (TypeError, ValueError, OverflowError):
        # Not a JSON value (a caller bug, not an agent's): grade its text rather than raise.
        return str(output)
