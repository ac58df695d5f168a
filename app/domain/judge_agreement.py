"""How far the judge agrees with people: the confusion, Cohen's kappa and its interval, the rates.

Pure arithmetic on counts (contract section 15): the service counts, this module only divides.
A figure whose denominator is zero is None, never a made-up number.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar
from uuid import UUID

import msgspec

Interval = tuple[float, float]
Item = TypeVar("Item", bound=Hashable)
Reviewer = TypeVar("Reviewer", str, UUID)

KAPPA_CI_METHOD = "jeffreys-dirichlet-monte-carlo"
# Draws from the posterior of the four cell shares: 2,000 keep the Monte Carlo error of each
# end near 0.01 of kappa and the whole interval a few milliseconds, whatever the count.
KAPPA_CI_DRAWS = 2_000
_JEFFREYS = 0.5
# A fixed seed: the same counts always give the same interval.
_SEED = 15


class Confusion(msgspec.Struct, frozen=True, kw_only=True):
    """Judge verdicts against human labels on the same results, counted by the four outcomes."""

    both_passed: int = 0
    both_failed: int = 0
    judge_passed_human_failed: int = 0
    judge_failed_human_passed: int = 0

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        """Counted from (judge_passed, human_passed) pairs."""
        counts = Counter(pairs)
        return cls(
            both_passed=counts[(True, True)],
            both_failed=counts[(False, False)],
            judge_passed_human_failed=counts[(True, False)],
            judge_failed_human_passed=counts[(False, True)],
        )

    @property
    def labelled(self) -> int:
        """Results with both a judge verdict and a human label."""
        return self.agreed + self.judge_passed_human_failed + self.judge_failed_human_passed

    @property
    def agreed(self) -> int:
        """Results where the judge and the person gave the same verdict."""
        return self.both_passed + self.both_failed

    @property
    def judge_passed(self) -> int:
        """Results the judge passed."""
        return self.both_passed + self.judge_passed_human_failed

    @property
    def human_passed(self) -> int:
        """Results the person passed."""
        return self.both_passed + self.judge_failed_human_passed


class Agreement(msgspec.Struct, frozen=True, kw_only=True):
    """The figures of one criterion (contract section 15, "Agreement")."""

    labelled: int
    agreement: float | None
    cohen_kappa: float | None
    kappa_ci95: Interval | None
    human_pass_rate: float | None
    judge_pass_rate: float | None
    # The judge's, taking the human label as truth.
    true_positive_rate: float | None
    true_negative_rate: float | None
    confusion: Confusion


class RaterAgreement(msgspec.Struct, frozen=True, kw_only=True):
    """How often people agreed with each other over the items they both labelled."""

    # Pairs of labels compared: one per item and pair of people who both labelled it.
    pairs: int
    agreement: float | None
    cohen_kappa: float | None
    kappa_ci95: Interval | None


def share(part: int, whole: int) -> float | None:
    """part / whole, or None when there is no whole."""
    return part / whole if whole else None


def cohen_kappa(confusion: Confusion) -> float | None:
    """Cohen's kappa, or None when undefined: no labels, or both gave one and the same class.

    Computed on integers, so "undefined" is decided exactly rather than by a float tolerance.
    """
    n = confusion.labelled
    judge_failed, human_failed = n - confusion.judge_passed, n - confusion.human_passed
    by_chance = confusion.judge_passed * confusion.human_passed + judge_failed * human_failed
    if n * n == by_chance:
        return None
    return (n * confusion.agreed - by_chance) / (n * n - by_chance)


def kappa_ci95(confusion: Confusion) -> Interval | None:
    """A 95% interval for Cohen's kappa, or None where kappa is undefined.

    Method: the equal-tailed 95% interval of kappa over the posterior of the four cell shares
    under Jeffreys' prior, Dirichlet(cells + 1/2), from 2,000 Monte Carlo draws with a fixed
    seed, widened if need be to contain the estimate (an empty cell otherwise puts an estimate
    of 1 outside its own interval). The posterior has the width the counts warrant, so five
    labels give an interval most of [-1, 1] wide; it never leaves [-1, 1]; it costs the same
    for 10 labels as for 100,000; and its coverage was checked by simulation
    (tests/unit/domain/test_judge_agreement.py).
    """
    estimate = cohen_kappa(confusion)
    if estimate is None:
        return None
    low, high = _posterior_interval(
        confusion.both_passed,
        confusion.judge_passed_human_failed,
        confusion.judge_failed_human_passed,
        confusion.both_failed,
    )
    return min(low, estimate), max(high, estimate)


@functools.lru_cache(maxsize=4096)
def _posterior_interval(a: int, b: int, c: int, d: int) -> Interval:
    """The 2.5th and 97.5th percentiles of kappa over Dirichlet(a, b, c, d + 1/2 each) draws."""
    draws = random.Random(_SEED)  # noqa: S311 - statistics, not secrets
    gamma = draws.gammavariate
    alpha_a, alpha_b, alpha_c, alpha_d = (cell + _JEFFREYS for cell in (a, b, c, d))
    kappas: list[float] = []
    for _ in range(KAPPA_CI_DRAWS):
        pa, pb = gamma(alpha_a, 1.0), gamma(alpha_b, 1.0)
        pc, pd = gamma(alpha_c, 1.0), gamma(alpha_d, 1.0)
        # Kappa is unchanged by the scale, so the gamma draws need not be normalised:
        # (total * agreed - by_chance) / (total^2 - by_chance), all in unnormalised shares.
        total = pa + pb + pc + pd
        by_chance = (pa + pb) * (pa + pc) + (pc + pd) * (pb + pd)
        if total * total > by_chance:
            kappas.append((total * (pa + pd) - by_chance) / (total * total - by_chance))
    kappas.sort()
    return _percentile(kappas, 0.025), _percentile(kappas, 0.975)


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    """The fraction-quantile of sorted values, interpolated between neighbours."""
    position = fraction * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def agreement_figures(confusion: Confusion) -> Agreement:
    """Every figure of section 15 from the four counts; None wherever a denominator is zero."""
    n = confusion.labelled
    human_failed = n - confusion.human_passed
    return Agreement(
        labelled=n,
        agreement=share(confusion.agreed, n),
        cohen_kappa=cohen_kappa(confusion),
        kappa_ci95=kappa_ci95(confusion),
        human_pass_rate=share(confusion.human_passed, n),
        judge_pass_rate=share(confusion.judge_passed, n),
        true_positive_rate=share(confusion.both_passed, confusion.human_passed),
        true_negative_rate=share(confusion.both_failed, human_failed),
        confusion=confusion,
    )


def majority_label(labels: Sequence[bool]) -> bool | None:
    """What most people said of one item; None on a tie (or no labels), which is left out."""
    passed = sum(labels)
    failed = len(labels) - passed
    if passed == failed:
        return None
    return passed > failed


def self_consistency(samples_per_reply: Iterable[Sequence[bool]]) -> float | None:
    """How often repeated judging of one reply agreed, or None with no reply judged twice.

    Per reply with at least two samples: the share of its pairs of samples that gave the same
    verdict (k samples make k(k-1)/2 pairs). The figure is the mean of those shares over the
    replies, so each reply counts once however often it was judged. 1.0: the judge never
    changed its mind; two samples that differ give 0.0 for that reply.
    """
    shares: list[float] = []
    for samples in samples_per_reply:
        k = len(samples)
        if k < 2:
            continue
        passed = sum(samples)
        agreeing = passed * (passed - 1) + (k - passed) * (k - passed - 1)
        shares.append(agreeing / (k * (k - 1)))
    return sum(shares) / len(shares) if shares else None


def rater_agreement(labels: Mapping[Item, Mapping[Reviewer, bool]]) -> RaterAgreement:
    """People's agreement with each other: every pair of people over each item both labelled.

    Each item labelled by k people gives k(k-1)/2 pairs of labels, each pair read in the order
    of its two reviewers' ids: with two people this is Cohen's kappa between them, with more it
    is the kappa of all their pairs pooled.
    """
    pairs = (
        (by_reviewer[first], by_reviewer[second])
        for by_reviewer in labels.values()
        for first, second in itertools.combinations(sorted(by_reviewer), 2)
    )
    confusion = Confusion.from_pairs(pairs)
    n = confusion.labelled
    return RaterAgreement(
        pairs=n,
        agreement=share(confusion.agreed, n),
        cohen_kappa=cohen_kappa(confusion),
        kappa_ci95=kappa_ci95(confusion),
    )
