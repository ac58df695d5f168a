"""When a gate should doubt its judge (contract section 15): an llm_judge criterion the run
graded that people have labelled too little, or that agrees with them too weakly.

The bar is the literature's: Cohen's kappa of at least 0.6 ("substantial" on Landis and Koch's
scale) over at least 20 labelled results. Fewer labels than that, and no figure is trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agentlasso.domain.judge_agreement import Agreement

MIN_LABELS = 20
MIN_KAPPA = 0.6
# Every answer about the run carries them: a dataset of many criteria names the first ones.
MAX_WARNINGS = 20


def _quoted(criterion: str) -> str:
    shown = criterion if len(criterion) <= 120 else criterion[:119] + "…"
    return f"\u201c{shown}\u201d"


def warning_for(criterion: str, figures: Agreement | None) -> str | None:
    """Why the gate should doubt the judge on this criterion, or None when people have checked
    it enough and it agrees with them."""
    labelled = 0 if figures is None else figures.labelled
    name = _quoted(criterion)
    if figures is None or labelled < MIN_LABELS:
        return (
            f"The AI judge's criterion {name} has {labelled} of the {MIN_LABELS} labelled "
            "results needed to know how far to trust it: label some in Review."
        )
    kappa = figures.cohen_kappa
    if kappa is None:
        return (
            f"The AI judge's agreement with people on {name} cannot be measured: all "
            f"{labelled} labelled results are of one kind (label results of both kinds)."
        )
    if kappa < MIN_KAPPA:
        interval = figures.kappa_ci95
        ci = "" if interval is None else f" (95% interval {interval[0]:.2f} to {interval[1]:.2f})"
        return (
            f"The AI judge agrees with people on {name} at kappa {kappa:.2f}{ci} over "
            f"{labelled} labelled results, below {MIN_KAPPA}: its verdicts deserve a look."
        )
    return None


def doubt_reason(criterion: str, figures: Agreement | None) -> str | None:
    """Why a failure of this criterion is not graded where the project asks for that: people
    disagree with the judge on it (kappa below MIN_KAPPA over MIN_LABELS or more); None when
    they do not, or too few have said (a criterion nobody checked is warned of, not doubted)."""
    if figures is None or figures.labelled < MIN_LABELS or figures.cohen_kappa is None:
        return None
    if figures.cohen_kappa >= MIN_KAPPA:
        return None
    return (
        f"its failure is set aside by the project's setting, since the AI judge agrees with "
        f"people on {_quoted(criterion)} at kappa {figures.cohen_kappa:.2f} over "
        f"{figures.labelled} labelled results, below {MIN_KAPPA}."
    )


def judge_warnings(criteria: Iterable[str], figures: Mapping[str, Agreement]) -> list[str]:
    """A warning for each criterion (in order) whose judge the gate should doubt; past
    MAX_WARNINGS, one line says how many more."""
    found = (warning_for(criterion, figures.get(criterion)) for criterion in criteria)
    warnings = [warning for warning in found if warning is not None]
    if len(warnings) <= MAX_WARNINGS:
        return warnings
    more = len(warnings) - MAX_WARNINGS
    return [*warnings[:MAX_WARNINGS], f"...and {more} more criteria of the AI judge like these."]
