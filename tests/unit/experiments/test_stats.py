"""The table statistics: Student-t intervals against published tables, TOST against its interval
form, Holm against its definition, the power of the paired t-test against closed forms and the
values the results cite, the bootstrap on cases with known answers."""

from __future__ import annotations

import math
import random

import pytest

from bockparse.experiments.stats import (
    bootstrap_interval,
    detectable_difference,
    holm,
    paired_test,
    power,
    verdict,
)


@pytest.mark.parametrize(
    ("level", "df", "expected"),
    # Student-t critical values t_{(1 + level) / 2} (any statistics table, six digits)
    [(0.90, 1, 6.313752), (0.90, 2, 2.919986), (0.95, 2, 4.302653), (0.90, 4, 2.131847),
     (0.95, 10, 2.228139), (0.99, 30, 2.749996)],
)  # fmt: skip
def test_the_interval_uses_the_tabled_student_t_quantile(level, df, expected):
    diffs = {seed: 0.1 * seed**1.5 for seed in range(df + 1)}
    test = paired_test(diffs, margin=0.5, level=level)
    half = (test.ci_high - test.ci_low) / 2
    assert half / (test.sd / math.sqrt(df + 1)) == pytest.approx(expected, abs=2e-6)
    assert (test.ci_low + test.ci_high) / 2 == pytest.approx(test.mean, abs=1e-12)


def test_power_of_the_paired_t_test():
    # no true difference: the test rejects at its level
    assert power(0.0, 0.4, 3) == pytest.approx(0.05, abs=1e-9)
    assert power(0.0, 0.4, 5, alpha=0.05 / 6) == pytest.approx(0.05 / 6, abs=1e-9)
    # the values docs/results.md cites (issue 53): 0.5 LAS with sd 0.38 over three seeds
    assert power(0.5, 0.38, 3) == pytest.approx(0.2625, abs=1e-4)
    assert power(0.5, 0.38, 3, alpha=0.05 / 6) == pytest.approx(0.0502, abs=1e-4)
    # the far tails stay finite where scipy's lower-tail cdf is not (nct.cdf(-4.3, 2, 8) is NaN)
    assert power(8 * 0.38 / math.sqrt(3), 0.38, 3) == pytest.approx(0.958, abs=1e-3)
    assert power(1.0, 0.38, 3) < power(1.5, 0.38, 3) < power(1.5, 0.38, 6)
    with pytest.raises(ValueError, match="n >= 2"):
        power(0.5, 0.38, 1)


def test_detectable_difference_inverts_the_power():
    for sd, n, alpha in ((0.38, 3, 0.05), (0.19, 3, 0.05 / 6), (1.0, 10, 0.05)):
        d = detectable_difference(sd, n, alpha)
        assert power(d, sd, n, alpha) == pytest.approx(0.80, abs=1e-9)
        assert detectable_difference(2 * sd, n, alpha) == pytest.approx(2 * d, rel=1e-9)
    # statsmodels' TTestPower().solve_power(nobs=3, alpha=0.05, power=0.8) = 3.2640 sd
    assert detectable_difference(1.0, 3) == pytest.approx(3.2640, abs=1e-4)


def test_tost_rejects_exactly_when_the_90_interval_lies_inside_the_margin():
    rng = random.Random(7)
    agreed = 0
    for _ in range(500):
        n = rng.randint(2, 6)
        diffs = {s: rng.gauss(rng.uniform(-0.6, 0.6), rng.uniform(0.01, 0.5)) for s in range(n)}
        test = paired_test(diffs, margin=0.5, level=0.90)
        inside = -0.5 < test.ci_low and test.ci_high < 0.5
        assert (test.p_equivalence < 0.05) == inside
        # the t-test rejects 0 exactly when the 95 % interval excludes it
        wide = paired_test(diffs, margin=0.5, level=0.95)
        assert (test.p_difference < 0.05) == (wide.ci_low > 0 or wide.ci_high < 0)
        agreed += inside
    assert 0 < agreed < 500  # both outcomes occurred


def test_paired_test_on_a_known_case_and_degenerate_ones():
    test = paired_test({1111: 0.23, 2222: -0.47, 3333: -0.71}, margin=0.5)
    assert test.n == 3 and test.mean == pytest.approx(-0.316667, abs=1e-6)
    half = 2.919986 * test.sd / 3**0.5
    assert (test.ci_low, test.ci_high) == pytest.approx((test.mean - half, test.mean + half))
    assert verdict(test.p_difference, test.p_equivalence, 0.5).startswith("no difference")
    for diffs in ({1: 0.3}, {1: 0.2, 2: 0.2}, {}):
        test = paired_test(diffs, margin=0.5)
        assert test.p_difference is test.p_equivalence is test.ci_low is None
        assert verdict(None, None, 0.5).startswith("not testable")
    with pytest.raises(ValueError, match="margin"):
        paired_test({1: 0.1, 2: 0.2}, margin=0.0)


def test_verdict_wording():
    assert verdict(0.01, 0.9, 0.5) == "difference detected"
    assert verdict(0.6, 0.01, 0.5) == "equivalent within ±0.5"
    assert verdict(0.6, 0.2, 0.5) == "no difference detected (not shown equivalent)"


def test_holm_adjusts_by_rank_and_stays_monotone():
    assert holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert holm([0.5]) == [0.5]
    rng = random.Random(3)
    for _ in range(200):
        ps = [rng.random() for _ in range(rng.randint(1, 8))]
        adjusted = holm(ps)
        order = sorted(range(len(ps)), key=ps.__getitem__)
        ranked = [adjusted[i] for i in order]
        assert ranked == sorted(ranked) and all(a >= p for a, p in zip(adjusted, ps, strict=True))
        assert max(adjusted) <= 1.0


def test_bootstrap_interval():
    same = [[(8, 10)] * 50, [(6, 10)] * 50]  # every sentence alike: no spread
    assert bootstrap_interval(same, samples=200) == pytest.approx((70.0, 70.0))
    rng = random.Random(1)
    runs = [[(rng.randint(0, 20), 20) for _ in range(300)] for _ in range(3)]
    low, high = bootstrap_interval(runs, samples=500, seed=5)
    mean = sum(100 * sum(c for c, _ in r) / sum(t for _, t in r) for r in runs) / 3
    assert low < mean < high and high - low < 10
    assert bootstrap_interval(runs, samples=500, seed=5) == (low, high)  # reproducible
    with pytest.raises(ValueError, match="same sentences"):
        bootstrap_interval([[(1, 2)], [(1, 2), (0, 1)]])


def test_bootstrap_interval_of_a_paired_difference():
    rng = random.Random(2)
    second = [[(rng.randint(0, 19), 20) for _ in range(300)] for _ in range(2)]
    # one more right word in every sentence: +5 points on every resample, whichever sentences
    # it draws (an unpaired resampling would spread)
    first = [[(c + 1, t) for c, t in second[0]]]
    low, high = bootstrap_interval(first, minus=second[:1], samples=300, seed=3)
    assert low == pytest.approx(5.0) and high == pytest.approx(5.0)
    assert bootstrap_interval(second, minus=second, samples=50) == (0.0, 0.0)
    # the difference's interval is the cells' resampled means subtracted pick by pick
    low, high = bootstrap_interval(second[:1], minus=second[1:], samples=400, seed=7)
    observed = [100 * sum(c for c, _ in r) / sum(t for _, t in r) for r in second]
    assert low < observed[0] - observed[1] < high
    alone = bootstrap_interval(second[:1], samples=400, seed=7)
    assert alone != (low, high)
    with pytest.raises(ValueError, match="same sentences"):
        bootstrap_interval(second, minus=[second[0][:10]])
