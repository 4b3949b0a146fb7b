"""Every decoder against exhaustive enumeration, and the paper's faithfulness result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bockparse.decoders import DECODERS, NoTreeError, check_tree, decode, tree_score
from bockparse.decoders.brute import all_trees
from bockparse.decoders.synthetic import integer_graph, parser_like

# Eisner is exact over projective trees only; it has its own oracle tests.
NONPROJECTIVE = tuple(m for m in DECODERS if m != "eisner")
FAST = tuple(m for m in NONPROJECTIVE if m != "brute")


def _graphs(count: int, seed: int) -> list[np.ndarray]:
    """Small graphs with many ties and forbidden arcs, scores of either sign."""
    rng = np.random.default_rng(seed)
    graphs = []
    for i in range(count):
        n = int(rng.integers(1, 8))
        low, high = [(-3, 3), (0, 4), (-4, 0), (-1, 1)][i % 4]
        forbid = [0.0, 0.2, 0.4][i % 3]
        graphs.append(integer_graph(n, rng, low=low, high=high, forbid=forbid))
    return graphs


GRAPHS = _graphs(3000, seed=20261201)


@pytest.fixture(scope="module")
def optima() -> list[tuple[float | None, float | None]]:
    """(unconstrained optimum, single-root optimum) per graph; None when infeasible."""
    out = []
    for S in GRAPHS:
        heads, values = all_trees(S, single_root=False)
        one_root = (heads[:, 1:] == 0).sum(axis=1) == 1
        out.append(
            (
                float(values.max()) if len(values) else None,
                float(values[one_root].max()) if one_root.any() else None,
            )
        )
    return out


@pytest.mark.parametrize("method", NONPROJECTIVE)
@pytest.mark.parametrize(
    ("single_root", "root_strategy"),
    [(False, None), (True, None), (True, "reweight")],
    ids=["rooted", "single-root", "single-root-reweight"],
)
def test_matches_brute_force(method, single_root, root_strategy, optima):
    for S, best in zip(GRAPHS, optima, strict=True):
        expected = best[1] if single_root else best[0]
        if expected is None:
            with pytest.raises(NoTreeError):
                decode(S, method, single_root=single_root, root_strategy=root_strategy)
            continue
        heads = decode(S, method, single_root=single_root, root_strategy=root_strategy)
        check_tree(heads, single_root=single_root)
        assert tree_score(S, heads) == expected, (S, heads)


def _both_bocks(S, single_root):
    out = []
    for method in ("bock", "bock-original"):
        try:
            out.append(decode(S, method, single_root=single_root))
        except NoTreeError:
            out.append(None)
    return out


@pytest.mark.parametrize("single_root", [False, True], ids=["rooted", "single-root"])
def test_original_and_reformulated_bock_identical_on_small_graphs(single_root):
    for S in GRAPHS:
        a, b = _both_bocks(S, single_root)
        assert (a is None and b is None) or np.array_equal(a, b), S


@pytest.mark.parametrize("single_root", [False, True], ids=["rooted", "single-root"])
def test_original_and_reformulated_bock_identical_on_parser_like(single_root):
    rng = np.random.default_rng(7)
    for _ in range(1000):
        S = parser_like(
            int(rng.integers(2, 60)), rng, gold_bonus=float(rng.choice([0.0, 2.0, 4.0]))
        )
        a, b = _both_bocks(S, single_root)
        assert np.array_equal(a, b)


def test_tarjan_returns_bocks_tree_on_small_graphs():
    """Theorem 1 (§4.1): rooted corrected Tarjan and Bock give identical arrays, ties included."""
    for S in GRAPHS:
        a, b = (_rooted(S, method) for method in ("bock", "tarjan"))
        assert (a is None and b is None) or np.array_equal(a, b), S


def _rooted(S, method):
    try:
        return decode(S, method, single_root=False)
    except NoTreeError:
        return None


def test_all_methods_reach_the_same_score_on_parser_like():
    rng = np.random.default_rng(11)
    for _ in range(1000):
        n = int(rng.integers(2, 101))
        S = parser_like(n, rng, gold_bonus=float(rng.choice([0.0, 1.0, 4.0])))
        for single_root in (False, True):
            values = {}
            for method in FAST:
                heads = decode(S, method, single_root=single_root)
                check_tree(heads, single_root=single_root)
                values[method] = tree_score(S, heads)
            ref = values["bock"]
            for method, v in values.items():
                assert v == pytest.approx(ref, rel=0, abs=1e-9 * max(1.0, abs(ref))), (method, n)


@given(
    n=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    shift=st.integers(-5, 5),
    method=st.sampled_from(FAST),
)
def test_shifting_one_dependent_keeps_the_tree_optimal(n, seed, shift, method):
    """Adding a constant to one dependent's column changes every tree by the same amount."""
    rng = np.random.default_rng(seed)
    S = integer_graph(n, rng, forbid=0.2)
    try:
        heads = decode(S, method)
    except NoTreeError:
        return
    d = int(rng.integers(1, n + 1))
    T = S.copy()
    T[:, d] += shift
    shifted = decode(T, method)
    assert tree_score(T, heads) == tree_score(T, shifted)
