"""One case's observation, with what its checks share computed once per case."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from agentlasso.domain.grades import CheckResult, DeclaredTools, JudgeVerdict, Observation
from agentlasso.grading.excerpts import name_list

_REPLY_MISSING = "The reply was not reported, so this check cannot be verified."
_TOOLS_MISSING = "The tool calls were not reported, so this check cannot be verified."
_REPLY_CAUSE = "The reply was not reported."
_TOOLS_CAUSE = "The tool calls were not reported."


class GradingContext:
    """The observation and the judge verdicts of one case, with lazily derived views."""

    __slots__ = (
        "_encoded",
        "_folded",
        "_names",
        "_report",
        "_sequence",
        "declared_tools",
        "observation",
        "out_of_time",
        "unmet",
        "verdicts",
    )

    def __init__(
        self,
        observation: Observation,
        verdicts: Mapping[str, JudgeVerdict],
        out_of_time: Callable[[], bool] = lambda: False,
        declared_tools: DeclaredTools | None = None,
    ) -> None:
        self.observation = observation
        # The input schemas of the tools the agent declares, by name (tool_args_valid).
        self.declared_tools = declared_tools
        self.verdicts = verdicts
        # Whether the time this grading may take is spent: regular expressions not yet run then
        # stay unrun. Supplied by the caller, which owns the clock; never spent by default.
        self.out_of_time = out_of_time
        # Why a check needing the reply or the tool calls fails before it runs (None: it runs).
        self.unmet = unmet_needs(observation)
        self._folded: str | None = None
        self._encoded: bytes | None = None
        self._names: frozenset[str] | None = None
        self._sequence: tuple[str, ...] | None = None
        self._report: str | None = None

    @property
    def reply(self) -> str:
        """The reply; only called by checks that run once the reply is known to be reported."""
        reply = self.observation.actual_output
        assert reply is not None, "a reply check ran without a reported reply"
        return reply

    def folded_reply(self) -> str:
        """The reply case-folded, computed once per case."""
        if self._folded is None:
            self._folded = self.reply.casefold()
        return self._folded

    def encoded_reply(self) -> bytes:
        """The reply as UTF-8 for RE2, computed once per case."""
        if self._encoded is None:
            # A lone surrogate (JSON allows "\ud800") becomes "?": one character for one.
            self._encoded = self.reply.encode("utf-8", "replace")
        return self._encoded

    def tool_sequence(self) -> tuple[str, ...]:
        """The names of the calls, in order; () when none were reported."""
        if self._sequence is None:
            calls = self.observation.tool_calls or ()
            self._sequence = tuple(call.name for call in calls)
        return self._sequence

    def tool_names(self) -> frozenset[str]:
        """The set of names called, computed once per case."""
        if self._names is None:
            self._names = frozenset(self.tool_sequence())
        return self._names

    def tool_report(self) -> str:
        """`The agent called: a, b.` (or `... no tools.`) plus any unreadable entries."""
        if self._report is None:
            sequence = self.tool_sequence()
            called = (
                f"The agent called: {name_list(sequence)}."
                if sequence
                else "The agent called no tools."
            )
            self._report = called + self.unreadable_note()
        return self._report

    def unreadable_note(self) -> str:
        """A note on reported entries that could not be read, or nothing."""
        problems = self.observation.unreadable_tool_calls
        if not problems:
            return ""
        shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
        return f" Could not read every reported tool call: {shown}."


def blocking_causes(context: GradingContext, results: Iterable[CheckResult]) -> tuple[str, ...]:
    """One sentence per reason that failed checks unrun, for the case's one-line reasoning."""
    if context.unmet["reply"] is None and context.unmet["tool_calls"] is None:
        return ()  # the usual case, on the hot path: nothing was missing
    details = {result.detail for result in results}
    causes: list[str] = []
    for need, short in (("reply", _REPLY_CAUSE), ("tool_calls", _TOOLS_CAUSE)):
        detail = context.unmet[need]
        if detail is None or detail not in details:
            continue
        # An agent failure blocks both needs with one message: say it once, as it is.
        cause = detail if context.observation.agent_error is not None else short
        if cause not in causes:
            causes.append(cause)
    return tuple(causes)


def unmet_needs(observation: Observation) -> dict[str, str | None]:
    """Per need ("reply", "tool_calls", "latency"), why checks needing it fail unrun, or None."""
    if observation.agent_error is not None:
        # A failed agent call is the case's failure: every check fails, naming it.
        error = observation.agent_error.strip().rstrip(".") or "the agent call failed"
        failure = f"{error[:1].upper()}{error[1:]}."
        return {"reply": failure, "tool_calls": failure, "latency": failure}
    return {
        "reply": _REPLY_MISSING if observation.actual_output is None else None,
        "tool_calls": _TOOLS_MISSING if observation.tool_calls is None else None,
        # A latency not reported leaves its check not graded, which the check itself says.
        "latency": None,
    }
