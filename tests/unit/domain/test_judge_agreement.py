"""The judge's agreement figures, held to scikit-learn's, and the kappa interval's coverage."""

from __future__ import annotations

import math
import random
import warnings
from uuid import UUID, uuid4

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from agentlasso.domain.judge_agreement import (
    Confusion,
    agreement_figures,
    cohen_kappa,
    kappa_ci95,
    majority_label,
    rater_agreement,
    self_consistency,
)

Pairs = list[tuple[bool, bool]]


def random_pairs(rng: random.Random, n: int, p_pass: float, p_agree: float) -> Pairs:
    """n (judge, human) pairs: the human passes with p_pass, the judge agrees with p_agree."""
    pairs = []
    for _ in range(n):
        human = rng.random() < p_pass
        pairs.append((human if rng.random() < p_agree else not human, human))
    return pairs


def label_sets() -> list[Pairs]:
    """Random sets of many sizes, one-class, all-agree, all-disagree and tiny sets of 1 to 3."""
    rng = random.Random(27)
    sets: list[Pairs] = [
        random_pairs(rng, n, rng.random(), rng.random())
        for n in (4, 7, 10, 25, 60, 200, 1_000)
        for _ in range(6)
    ]
    sets += [[(True, True)] * 9, [(False, False)] * 9, [(True, False)] * 9, [(False, True)] * 9]
    sets += [[(h, h) for h in (True, False, True, True)], [(not h, h) for h in (True, False)] * 3]
    sets += [[(True, True)] * 5 + [(True, False)] * 3, [(True, False)] * 4 + [(False, False)] * 2]
    sets += [[(j, h) for j in (True, False) for h in (True, False)]]
    tiny = [(True, True), (False, False), (True, False), (False, True)]
    sets += [[p] for p in tiny] + [[p, q] for p in tiny for q in tiny]
    sets += [[p, q, r] for p in tiny for q in tiny for r in tiny]
    return sets


def sklearn_kappa(pairs: Pairs) -> float | None:
    """scikit-learn's kappa, its nan (undefined, with a warning) read as None."""
    judge, human = [j for j, _ in pairs], [h for _, h in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kappa = float(cohen_kappa_score(judge, human, labels=[False, True]))
    return None if math.isnan(kappa) else kappa


@pytest.mark.parametrize("pairs", label_sets(), ids=lambda pairs: f"n{len(pairs)}")
def test_the_figures_are_scikit_learns(pairs: Pairs) -> None:
    figures = agreement_figures(Confusion.from_pairs(pairs))
    judge, human = [j for j, _ in pairs], [h for _, h in pairs]
    # Rows: the human's label (truth); columns: the judge's; False before True.
    (tn, fp), (fn, tp) = confusion_matrix(human, judge, labels=[False, True]).tolist()
    assert figures.confusion == Confusion(
        both_passed=tp, both_failed=tn, judge_passed_human_failed=fp, judge_failed_human_passed=fn
    )
    assert figures.labelled == len(pairs)
    assert figures.agreement == pytest.approx((tp + tn) / len(pairs))
    expected = sklearn_kappa(pairs)
    if expected is None:
        assert figures.cohen_kappa is None and figures.kappa_ci95 is None
    else:
        assert figures.cohen_kappa == pytest.approx(expected, abs=1e-12)
        assert figures.kappa_ci95 is not None
        low, high = figures.kappa_ci95
        assert -1.0 <= low <= expected <= high <= 1.0
    assert figures.human_pass_rate == pytest.approx(sum(human) / len(pairs))
    assert figures.judge_pass_rate == pytest.approx(sum(judge) / len(pairs))
    assert figures.true_positive_rate == (pytest.approx(tp / (tp + fn)) if tp + fn else None)
    assert figures.true_negative_rate == (pytest.approx(tn / (tn + fp)) if tn + fp else None)


def test_one_class_for_both_has_no_kappa_and_no_interval() -> None:
    for pairs in ([(True, True)] * 30, [(False, False)] * 30):
        figures = agreement_figures(Confusion.from_pairs(pairs))
        assert (figures.agreement, figures.cohen_kappa, figures.kappa_ci95) == (1.0, None, None)
    passed = agreement_figures(Confusion(both_passed=30))
    assert (passed.true_positive_rate, passed.true_negative_rate) == (1.0, None)


def test_nothing_labelled_is_counts_and_nones() -> None:
    figures = agreement_figures(Confusion.from_pairs([]))
    assert figures.labelled == 0 and figures.confusion == Confusion()
    assert {
        name: getattr(figures, name)
        for name in (
            "agreement", "cohen_kappa", "kappa_ci95", "human_pass_rate", "judge_pass_rate",
            "true_positive_rate", "true_negative_rate",
        )
    } == dict.fromkeys(
        (
            "agreement", "cohen_kappa", "kappa_ci95", "human_pass_rate", "judge_pass_rate",
            "true_positive_rate", "true_negative_rate",
        )
    )  # fmt: skip


def test_the_same_counts_give_the_same_interval() -> None:
    confusion = Confusion(
        both_passed=31, both_failed=12, judge_passed_human_failed=4, judge_failed_human_passed=3
    )
    assert kappa_ci95(confusion) == kappa_ci95(Confusion.from_pairs(
        [(True, True)] * 31 + [(False, False)] * 12 + [(True, False)] * 4 + [(False, True)] * 3
    ))  # fmt: skip


@pytest.mark.parametrize(
    "confusion",
    [
        Confusion(both_passed=3, both_failed=2),
        Confusion(
            both_passed=2, both_failed=1, judge_passed_human_failed=1, judge_failed_human_passed=1
        ),
        Confusion(both_passed=1, both_failed=3, judge_passed_human_failed=1),
    ],
)  # fmt: skip
def test_five_labels_give_a_wide_interval(confusion: Confusion) -> None:
    interval = kappa_ci95(confusion)
    assert interval is not None
    low, high = interval
    assert high - low >= 0.8, interval


def test_many_labels_give_a_narrow_interval_around_the_estimate() -> None:
    confusion = Confusion(
        both_passed=40_000, both_failed=40_000,
        judge_passed_human_failed=10_000, judge_failed_human_passed=10_000,
    )  # fmt: skip
    interval = kappa_ci95(confusion)
    assert interval is not None and interval[0] < 0.6 < interval[1]
    assert interval[1] - interval[0] < 0.02


def true_kappa(cells: tuple[float, float, float, float]) -> float:
    """Kappa of the cell shares (both passed, judge only, human only, both failed)."""
    a, b, c, d = cells
    by_chance = (a + b) * (a + c) + (c + d) * (b + d)
    return (a + d - by_chance) / (1 - by_chance)


@pytest.mark.parametrize("n", [20, 50, 200])
@pytest.mark.parametrize(
    "cells", [(0.4, 0.1, 0.1, 0.4), (0.7, 0.1, 0.05, 0.15)], ids=["balanced", "skewed"]
)
def test_the_interval_covers_the_true_kappa_about_95_in_100_times(
    n: int, cells: tuple[float, float, float, float]
) -> None:
    rng = random.Random(n)
    kappa, replications, covered = true_kappa(cells), 300, 0
    for _ in range(replications):
        drawn = rng.choices(range(4), weights=cells, k=n)
        a, b, c, d = (drawn.count(cell) for cell in range(4))
        sample = Confusion(
            both_passed=a, judge_passed_human_failed=b, judge_failed_human_passed=c, both_failed=d
        )
        interval = kappa_ci95(sample)
        # An undefined kappa has no interval, which covers nothing.
        covered += interval is not None and interval[0] <= kappa <= interval[1]
    assert 0.90 <= covered / replications <= 0.99


def test_kappa_is_exact_at_the_edges() -> None:
    assert cohen_kappa(Confusion(judge_passed_human_failed=5, judge_failed_human_passed=5)) == -1.0
    assert cohen_kappa(Confusion(both_passed=5, both_failed=5)) == 1.0
    # The judge passes everything the human sees both ways: no better than chance.
    assert cohen_kappa(Confusion(both_passed=5, judge_passed_human_failed=5)) == 0.0
    assert cohen_kappa(Confusion(judge_passed_human_failed=7)) == 0.0


@pytest.mark.parametrize(
    ("labels", "majority"),
    [
        ([], None), ([True], True), ([False], False), ([True, False], None),
        ([True, True, False], True), ([False, True, False], False),
        ([True, False, True, False], None), ([True] * 3 + [False] * 2, True),
    ],
)  # fmt: skip
def test_the_majority_counts_and_ties_are_left_out(
    labels: list[bool], majority: bool | None
) -> None:
    assert majority_label(labels) is majority


@pytest.mark.parametrize(
    ("samples", "consistency"),
    [
        ([], None), ([[True]], None), ([[True], [False]], None),
        ([[True, True]], 1.0), ([[True, False]], 0.0), ([[False, False, False]], 1.0),
        # Three samples, two pass: of the three pairs one agrees.
        ([[True, True, False]], 1 / 3),
        # Each reply counts once: (1 + 0) / 2; the single-sample reply is left out.
        ([[True] * 5, [True, False], [False]], 0.5),
        ([[True, True, False, False]], 1 / 3),
    ],
)  # fmt: skip
def test_self_consistency_is_the_share_of_agreeing_sample_pairs_per_reply(
    samples: list[list[bool]], consistency: float | None
) -> None:
    assert self_consistency(samples) == (
        None if consistency is None else pytest.approx(consistency)
    )


def test_two_reviewers_agree_as_scikit_learn_says() -> None:
    rng = random.Random(5)
    alice, bob, carol = sorted([uuid4(), uuid4(), uuid4()])
    labels: dict[int, dict[UUID, bool]] = {}
    for item in range(300):
        truth = rng.random() < 0.6
        labels[item] = {bob: truth if rng.random() < 0.85 else not truth}
        if item % 3:
            labels[item][alice] = truth if rng.random() < 0.9 else not truth
    # Carol labelled one item alone: no pair, nothing compared.
    labels[300] = {carol: True}
    both = [item for item, by in labels.items() if alice in by and bob in by]
    result = rater_agreement(labels)
    first, second = [labels[i][alice] for i in both], [labels[i][bob] for i in both]
    assert result.pairs == len(both) == 200
    assert result.agreement == pytest.approx(
        sum(x == y for x, y in zip(first, second, strict=True)) / 200
    )
    assert result.cohen_kappa == pytest.approx(float(cohen_kappa_score(first, second)))
    assert result.kappa_ci95 is not None


def test_three_reviewers_give_three_pairs_an_item() -> None:
    labels = {
        "i1": {"ann": True, "ben": True, "cat": False},
        "i2": {"cat": True, "ann": True},
        "i3": {"ben": False},
    }
    result = rater_agreement(labels)
    # i1: ann-ben agree, ann-cat and ben-cat differ; i2: ann-cat agree.
    assert (result.pairs, result.agreement) == (4, 0.5)
    # Oriented by reviewer id: (ann, ben) (ann, cat) (ben, cat) (ann, cat).
    pooled = [(True, True), (True, False), (True, False), (True, True)]
    assert result.cohen_kappa == cohen_kappa(Confusion.from_pairs(pooled))


def test_reviewers_with_nothing_in_common_compare_nothing() -> None:
    result = rater_agreement({"i1": {"ann": True}, "i2": {"ben": False}})
    assert (result.pairs, result.agreement, result.cohen_kappa, result.kappa_ci95) == (
        0, None, None, None
    )  # fmt: skip
    everyone_passes = rater_agreement({"i1": {"ann": True, "ben": True}})
    assert (everyone_passes.agreement, everyone_passes.cohen_kappa) == (1.0, None)
