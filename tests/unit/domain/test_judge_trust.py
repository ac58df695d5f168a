"""When the gate doubts its judge (contract section 15): fewer than 20 labels, kappa under 0.6,
or a kappa that cannot be measured; figures computed by agentlasso.domain.judge_agreement."""

from __future__ import annotations

from agentlasso.domain.judge_agreement import Confusion, agreement_figures
from agentlasso.domain.judge_trust import MAX_WARNINGS, doubt_reason, judge_warnings, warning_for

CRITERION = "States the refund amount"


def test_a_criterion_nobody_labelled_or_too_few_is_doubted_with_its_count() -> None:
    assert "has 0 of the 20 labelled results" in (warning_for(CRITERION, None) or "")
    few = agreement_figures(Confusion(both_passed=10, both_failed=9))
    assert "has 19 of the 20" in (warning_for(CRITERION, few) or "")


def test_a_weak_kappa_over_enough_labels_is_doubted_with_its_interval() -> None:
    weak = agreement_figures(
        Confusion(
            both_passed=8, both_failed=4, judge_passed_human_failed=5, judge_failed_human_passed=5
        )
    )
    assert weak.cohen_kappa is not None and weak.cohen_kappa < 0.6
    text = warning_for(CRITERION, weak) or ""
    assert f"at kappa {weak.cohen_kappa:.2f}" in text and "95% interval" in text
    assert "over 22 labelled results, below 0.6" in text


def test_a_strong_kappa_is_trusted_and_one_class_only_cannot_be_measured() -> None:
    strong = agreement_figures(
        Confusion(both_passed=15, both_failed=14, judge_passed_human_failed=1)
    )
    assert strong.cohen_kappa is not None and strong.cohen_kappa >= 0.6
    assert warning_for(CRITERION, strong) is None
    one_class = agreement_figures(Confusion(both_passed=25))
    assert one_class.cohen_kappa is None
    assert "cannot be measured" in (warning_for(CRITERION, one_class) or "")


def test_many_doubted_criteria_name_the_first_ones_and_count_the_rest() -> None:
    criteria = [f"criterion {n}" for n in range(MAX_WARNINGS + 5)]
    warnings = judge_warnings(criteria, {})
    assert len(warnings) == MAX_WARNINGS + 1
    assert "criterion 0" in warnings[0] and warnings[-1].startswith("...and 5 more")
    assert judge_warnings(criteria[:2], {}) == [warning_for(c, None) for c in criteria[:2]]


def test_only_a_measured_weak_kappa_sets_a_criterions_failures_aside() -> None:
    weak = agreement_figures(Confusion(both_passed=10, judge_failed_human_passed=10))
    assert "set aside by the project's setting" in (doubt_reason(CRITERION, weak) or "")
    assert doubt_reason(CRITERION, None) is None
    few = agreement_figures(Confusion(both_passed=5, judge_failed_human_passed=5))
    assert doubt_reason(CRITERION, few) is None, "too few labels: warned of, not set aside"
    one_class = agreement_figures(Confusion(both_passed=25))
    assert doubt_reason(CRITERION, one_class) is None
    strong = agreement_figures(
        Confusion(both_passed=15, both_failed=14, judge_passed_human_failed=1)
    )
    assert doubt_reason(CRITERION, strong) is None
