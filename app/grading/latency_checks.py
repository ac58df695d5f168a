"""The check that the agent answered in time: the call's latency, or in a conversation each
turn's (or with `total` all turns' together). A latency nobody reported is not graded."""

from __future__ import annotations

from agentlasso.domain.checks import LatencyBelow
from agentlasso.domain.grades import CheckResult
from agentlasso.grading.context import GradingContext
from agentlasso.grading.outcomes import decided, not_graded

_NOT_REPORTED = (
    "The agent call's latency was not reported (a CI client posts latency_ms), so this check "
    "cannot be graded."
)


def grade_latency_below(check: LatencyBelow, context: GradingContext) -> CheckResult:
    """Passes when the answer (each turn's, or the whole conversation's) took at most `ms`."""
    turns = context.observation.turn_latencies_ms
    if turns is not None and not check.total:
        return _each_turn(check, turns)
    took = context.observation.latency_ms if turns is None else _sum(turns)
    if took is None:
        return not_graded(check.id or "", check.severity, _NOT_REPORTED, "latency_below")
    what = (
        f"The agent answered in {took:,} ms"
        if turns is None
        else f"The {len(turns)} turns took {took:,} ms in all"
    )
    within = took <= check.ms
    detail = f"{what}, {'within' if within else 'over'} the {check.ms:,} ms allowed."
    return decided(check, "latency_below", within, detail)


def _each_turn(check: LatencyBelow, turns: tuple[int | None, ...]) -> CheckResult:
    """Passes when every turn took at most `ms`; names the slowest turn over it."""
    slowest = max(
        ((took, number) for number, took in enumerate(turns, 1) if took is not None),
        default=None,
    )
    if slowest is not None and slowest[0] > check.ms:
        took, number = slowest
        detail = f"Turn {number} took {took:,} ms, over the {check.ms:,} ms allowed each turn."
        return decided(check, "latency_below", False, detail)
    if slowest is None or None in turns:
        return not_graded(check.id or "", check.severity, _NOT_REPORTED, "latency_below")
    detail = (
        f"Every turn answered within the {check.ms:,} ms allowed (the slowest took "
        f"{slowest[0]:,} ms)."
    )
    return decided(check, "latency_below", True, detail)


def _sum(turns: tuple[int | None, ...]) -> int | None:
    """All turns' latency together; None when some turn's was not reported."""
    known = [took for took in turns if took is not None]
    return sum(known) if known and len(known) == len(turns) else None
