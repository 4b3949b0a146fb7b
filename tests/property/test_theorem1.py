"""Theorem 1 of the Bock paper (§4.1) in code: corrected Tarjan returns Bock's tree, ties included.

Both run Bock's component schedule with the common tie order (increasing original dependent,
then increasing original head), so after every completed column ``K`` Bock's starred arcs equal
the corrected-Tarjan recovery of the same prefix record, and the final rooted trees coincide
even when the optimum is not unique. Integer (or dyadic) scores keep the arithmetic exact; in
general floating point the two accumulate the same adjustments in different orders.
"""

from __future__ import annotations

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, decode
from bockparse.decoders.bock import prefix_stars
from bockparse.decoders.synthetic import integer_graph, parser_like
from bockparse.decoders.tarjan import prefix_branchings

RANGES = [(-3, 3), (0, 4), (-4, 0), (-1, 1), (0, 1)]


def tie_heavy(rng: np.random.Generator, i: int, max_words: int) -> np.ndarray:
    n = int(rng.integers(1, max_words + 1))
    low, high = RANGES[i % len(RANGES)]
    return integer_graph(n, rng, low=low, high=high, forbid=[0.0, 0.2, 0.4][i % 3])


def rooted(S: np.ndarray, method: str) -> np.ndarray | None:
    try:
        return decode(S, method, single_root=False)
    except NoTreeError:
        return None


def assert_same_tree(S: np.ndarray) -> None:
    a, b = rooted(S, "bock"), rooted(S, "tarjan")
    assert (a is None and b is None) or np.array_equal(a, b), (S, a, b)


def test_stars_equal_the_recovery_after_every_column():
    rng = np.random.default_rng(1971)
    infeasible = 0
    for i in range(4000):
        S = tie_heavy(rng, i, 8)
        stars = prefix_stars(S)
        recovered = prefix_branchings(S)
        np.testing.assert_array_equal(stars, recovered, err_msg=str(S))
        N = S.shape[0]
        for K in range(N):
            assert (stars[K, K + 1 :] == -1).all() and stars[K, 0] == -1
        tree = rooted(S, "bock")
        if tree is None:
            infeasible += 1
        else:
            np.testing.assert_array_equal(stars[N - 1], tree)
            assert (stars[np.arange(1, N), np.arange(1, N)] >= 0).all()  # column K starred
    assert 100 < infeasible < 2000  # forbidden arcs make some graphs infeasible


def test_the_hook_sees_a_prefix_that_differs_from_the_final_tree():
    """A transfer re-stars earlier columns (the paper's example, §3.2): the prefixes matter."""
    C = np.array([[np.inf, 50, 60], [np.inf, np.inf, 10], [np.inf, 20, np.inf]])
    stars = prefix_stars(-C)
    np.testing.assert_array_equal(stars, [[-1, -1, -1], [-1, 2, -1], [-1, 0, 1]])
    np.testing.assert_array_equal(prefix_branchings(-C), stars)


def test_same_tree_on_many_tie_heavy_graphs():
    rng = np.random.default_rng(2026)
    for i in range(20000):
        assert_same_tree(tie_heavy(rng, i, 10))


def test_same_tree_on_larger_tie_heavy_and_parser_like_graphs():
    rng = np.random.default_rng(415)
    for i in range(600):
        n = int(rng.integers(10, 60))
        low, high = RANGES[i % len(RANGES)]
        assert_same_tree(integer_graph(n, rng, low=low, high=high, forbid=0.3))
        # Multiples of 1/8: exact arithmetic, with ties.
        assert_same_tree(np.round(8 * parser_like(n, rng, gold_bonus=2.0)) / 8)
        assert_same_tree(parser_like(n, rng, gold_bonus=float(i % 3)))


@pytest.mark.slow
def test_same_tree_and_prefixes_on_a_hundred_thousand_graphs():
    rng = np.random.default_rng(19710415)
    for i in range(100000):
        S = tie_heavy(rng, i, 14)
        assert_same_tree(S)
        if i % 10 == 0:
            np.testing.assert_array_equal(prefix_stars(S), prefix_branchings(S))
