"""The statistics behind the experiment tables: paired differences over seeds with Student-t
confidence intervals, the two one-sided tests (TOST) of equivalence within a margin, Holm's
step-down correction across a table's comparisons, the power of the paired t-test (the smallest
difference it detects), and sentence-level bootstrap intervals.

The distributions and tests are the field's reference implementations: ``scipy.stats`` (the
paired t-test as ``ttest_1samp`` of the differences, which is ``ttest_rel``; the Student-t and
noncentral-t distributions) and ``statsmodels`` (``ttost_paired``, ``multipletests(method=
"holm")``).

What the numbers license (:func:`verdict`): a difference is *detected* when the paired t-test
rejects 0 after Holm's correction; *equivalence within ±margin* is claimed only when the TOST
rejects both one-sided nulls (|difference| ≥ margin) after Holm's correction. Uncorrected, a
TOST rejection at level α is the (1 − 2α) interval (90 % at α = 0.05) lying inside ±margin;
after Holm's correction over k tests the smallest p-value must pass α/k, which is the
(1 − 2α/k) interval lying inside ±margin (98.3 % for k = 6). Neither: "no difference
detected", which is not evidence of equivalence; :func:`detectable_difference` says how large
a difference the test would have found.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison over seeds: ``a[seed] - b[seed]``.

    Attributes:
        differences: seed -> difference, in seed order.
        mean, sd: their mean and sample standard deviation (``None`` below two seeds).
        ci_low, ci_high: the two-sided ``level`` Student-t interval of the mean difference.
        level: the interval's coverage (0.90: the interval TOST at α = 0.05 reads).
        p_difference: two-sided paired t-test of "no difference".
        p_equivalence: TOST p-value against ``±margin`` (the larger of the two one-sided ones).
        margin: the equivalence margin (same units as the differences).
    """

    differences: Mapping[int, float]
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    level: float
    p_difference: float | None
    p_equivalence: float | None
    margin: float

    @property
    def n(self) -> int:
        return len(self.differences)


def paired_test(differences: Mapping[int, float], margin: float, level: float = 0.90) -> PairedTest:
    """Mean difference, its Student-t interval, the paired t-test and the TOST against
    ``±margin`` (``margin > 0``). Below two seeds, or with all differences equal, the interval
    and the p-values are ``None`` (no spread to test with).

    The t-test is ``scipy.stats.ttest_1samp`` of the differences against 0 (the paired t-test,
    ``ttest_rel``, of the two conditions), the interval its ``confidence_interval(level)``, the
    TOST ``statsmodels``' ``ttost_paired`` (the larger of the two one-sided p-values)."""
    if margin <= 0:
        raise ValueError(f"the equivalence margin must be positive, got {margin}")
    diffs = dict(sorted(differences.items()))
    n = len(diffs)
    mean = statistics.fmean(diffs.values()) if n else None
    sd = statistics.stdev(diffs.values()) if n >= 2 else None
    if n < 2 or not sd:
        return PairedTest(diffs, mean, sd, None, None, level, None, None, margin)
    values = np.array(list(diffs.values()), dtype=np.float64)
    test = sps.ttest_1samp(values, 0.0)
    ci = test.confidence_interval(level)
    p_equiv = ttost_paired(values, np.zeros_like(values), -margin, margin)[0]
    return PairedTest(
        diffs, mean, sd, float(ci.low), float(ci.high), level, float(test.pvalue),
        float(p_equiv), margin,
    )  # fmt: skip


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (``statsmodels``' ``multipletests(method="holm")``);
    ``None`` entries are left out of the family."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if present:
        corrected = multipletests([p_values[i] for i in present], method="holm")[1]
        for i, p in zip(present, corrected, strict=True):
            adjusted[i] = float(p)
    return adjusted


def power(difference: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """The probability that the two-sided paired t-test at level ``alpha`` over ``n`` seeds
    rejects "no difference" when the true mean difference is ``difference`` and the seed
    standard deviation of the differences ``sd``: the noncentral t (``scipy.stats.nct``, ``n -
    1`` degrees of freedom, noncentrality ``difference·√n / sd``) beyond ±t_{1−α/2}. Both tails
    are upper tails (``P(T < −c; δ) = P(T > c; −δ)``): scipy's far lower-tail ``cdf`` can be
    NaN where its ``sf`` is not."""
    if n < 2 or sd <= 0:
        raise ValueError(f"power needs n >= 2 and sd > 0, got n={n}, sd={sd}")
    df = n - 1
    critical = sps.t.ppf(1.0 - alpha / 2.0, df)
    shift = difference * math.sqrt(n) / sd
    return float(sps.nct.sf(critical, df, shift) + sps.nct.sf(critical, df, -shift))


def detectable_difference(sd: float, n: int, alpha: float = 0.05, target: float = 0.80) -> float:
    """The smallest true mean difference the two-sided paired t-test at level ``alpha`` over
    ``n`` seeds detects with probability ``target`` (:func:`power`), for a seed standard
    deviation of the differences ``sd``; in the units of ``sd``."""
    if n < 2 or sd <= 0:
        raise ValueError(f"a detectable difference needs n >= 2 and sd > 0, got n={n}, sd={sd}")
    high = sd
    while power(high, sd, n, alpha) < target:
        high *= 2.0
    return float(optimize.brentq(lambda d: power(d, sd, n, alpha) - target, 0.0, high, xtol=1e-12))


# Below this many seeds an equivalence reading carries a caution: with two, the t interval
# rests on one degree of freedom, a single spread estimate.
CAUTION_SEEDS = 3


def verdict(p_difference: float | None, p_equivalence: float | None, margin: float,
            alpha: float = 0.05, seeds: int | None = None) -> str:  # fmt: skip
    """What a (Holm-adjusted) pair of p-values supports, in words (module doc); an equivalence
    over ``seeds`` < :data:`CAUTION_SEEDS` seeds says so."""
    if p_difference is None or p_equivalence is None:
        return "not testable (fewer than two seeds, or no spread)"
    if p_difference < alpha:
        return "difference detected"
    if p_equivalence < alpha:
        caution = ""
        if seeds is not None and seeds < CAUTION_SEEDS:
            caution = f" (caution: only {seeds} seeds)"
        return f"equivalent within ±{margin:g}{caution}"
    return "no difference detected (not shown equivalent)"


def bootstrap_interval(
    per_sentence: Sequence[Sequence[tuple[int, int]]],
    *,
    minus: Sequence[Sequence[tuple[int, int]]] = (),
    samples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Sentence-level percentile bootstrap interval of a cell's mean score over runs, or of the
    difference of two cells' means.

    Args:
        per_sentence: per run (seed), per sentence ``(correct, total)`` words, the same
            sentences in the same order for every run; each resample draws sentences with
            replacement, once for all runs (the runs are paired on sentences).
        minus: runs of a second cell on the same sentences; when given, the interval is of the
            first cell's mean minus this one's, both scored on every resample (a paired
            difference: sentence sampling only, not the seeds' spread).
        samples: bootstrap resamples.
        level: the interval's coverage.
        seed: the resampling seed (the interval is reproducible).

    Returns:
        ``(low, high)`` in percent (percentage points for a difference).
    """
    if not per_sentence or not per_sentence[0]:
        raise ValueError("no sentences to resample")
    size = len(per_sentence[0])
    if any(len(run) != size for run in (*per_sentence, *minus)):
        raise ValueError("every run must score the same sentences")

    def mean(runs: Sequence[Sequence[tuple[int, int]]], picks: list[int]) -> float:
        scores = []
        for run in runs:
            correct = sum(run[i][0] for i in picks)
            total = sum(run[i][1] for i in picks)
            scores.append(100.0 * correct / total if total else 0.0)
        return statistics.fmean(scores)

    rng = random.Random(seed)
    means = []
    for _ in range(samples):
        picks = [rng.randrange(size) for _ in range(size)]
        means.append(mean(per_sentence, picks) - (mean(minus, picks) if minus else 0.0))
    means.sort()
    low = means[math.floor((1.0 - level) / 2.0 * samples)]
    high = means[min(samples - 1, math.ceil((1.0 + level) / 2.0 * samples) - 1)]
    return low, high
