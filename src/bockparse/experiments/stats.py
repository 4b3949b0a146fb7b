"""The statistics behind the experiment tables: paired differences over seeds with Student-t
confidence intervals, the two one-sided tests (TOST) of equivalence within a margin, Holm's
step-down correction across a table's comparisons, and sentence-level bootstrap intervals.

Standard library only (no SciPy): the Student-t distribution function is the regularised
incomplete beta function, evaluated by its continued fraction (Press et al., *Numerical
Recipes*, §6.4), and its quantiles by bisection on it.

What the numbers license (:func:`verdict`): a difference is *detected* when the paired t-test
rejects 0 after Holm's correction; *equivalence within ±margin* is claimed only when the TOST
rejects both one-sided nulls (|difference| ≥ margin) after Holm's correction, which at level α
is the same as the (1 − 2α) interval lying inside ±margin. Neither: "no difference detected",
which is not evidence of equivalence.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence for a={a}, b={b}, x={x}")


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for ``0 <= x <= 1``."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must lie in [0, 1], got {x}")
    if x in (0.0, 1.0):
        return x
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


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
    and the p-values are ``None`` (no spread to test with)."""
    if margin <= 0:
        raise ValueError(f"the equivalence margin must be positive, got {margin}")
    diffs = dict(sorted(differences.items()))
    n = len(diffs)
    mean = statistics.fmean(diffs.values()) if n else None
    sd = statistics.stdev(diffs.values()) if n >= 2 else None
    if n < 2 or not sd:
        return PairedTest(diffs, mean, sd, None, None, level, None, None, margin)
    se, df = sd / math.sqrt(n), n - 1
    half = t_quantile(0.5 + level / 2.0, df) * se
    p_diff = 2.0 * (1.0 - t_cdf(abs(mean) / se, df))
    p_lower = 1.0 - t_cdf((mean + margin) / se, df)  # H0: difference <= -margin
    p_upper = t_cdf((mean - margin) / se, df)  # H0: difference >= +margin
    return PairedTest(
        diffs, mean, sd, mean - half, mean + half, level, p_diff, max(p_lower, p_upper), margin
    )


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (``None`` entries are left out of the family)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for k, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - k) * p))
        adjusted[i] = running
    return adjusted


def verdict(p_difference: float | None, p_equivalence: float | None, margin: float,
            alpha: float = 0.05) -> str:  # fmt: skip
    """What a (Holm-adjusted) pair of p-values supports, in words (module doc)."""
    if p_difference is None or p_equivalence is None:
        return "not testable (fewer than two seeds, or no spread)"
    if p_difference < alpha:
        return "difference detected"
    if p_equivalence < alpha:
        return f"equivalent within ±{margin:g}"
    return "no difference detected (not shown equivalent)"


def bootstrap_interval(
    per_sentence: Sequence[Sequence[tuple[int, int]]],
    *,
    samples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Sentence-level percentile bootstrap interval of a cell's mean score over runs.

    Args:
        per_sentence: per run (seed), per sentence ``(correct, total)`` words, the same
            sentences in the same order for every run; each resample draws sentences with
            replacement, once for all runs (the runs are paired on sentences).
        samples: bootstrap resamples.
        level: the interval's coverage.
        seed: the resampling seed (the interval is reproducible).

    Returns:
        ``(low, high)`` in percent.
    """
    if not per_sentence or not per_sentence[0]:
        raise ValueError("no sentences to resample")
    size = len(per_sentence[0])
    if any(len(run) != size for run in per_sentence):
        raise ValueError("every run must score the same sentences")
    rng = random.Random(seed)
    means = []
    for _ in range(samples):
        picks = [rng.randrange(size) for _ in range(size)]
        scores = []
        for run in per_sentence:
            correct = sum(run[i][0] for i in picks)
            total = sum(run[i][1] for i in picks)
            scores.append(100.0 * correct / total if total else 0.0)
        means.append(statistics.fmean(scores))
    means.sort()
    low = means[math.floor((1.0 - level) / 2.0 * samples)]
    high = means[min(samples - 1, math.ceil((1.0 + level) / 2.0 * samples) - 1)]
    return low, high
