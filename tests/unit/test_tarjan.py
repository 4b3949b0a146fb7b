"""Corrected Tarjan ("tarjan"): exactness against brute force, Gabow–Tarjan single root, edges."""

from __future__ import annotations

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, check_tree, decode, tarjan, tree_score
from bockparse.decoders.trees import load_scores

NEG = -np.inf


def optimum(S, single_root):
    """Brute-force optimum score, or None when no (single-root) tree exists."""
    try:
        return tree_score(S, decode(S, "brute", single_root=single_root))
    except NoTreeError:
        return None


def tarjan_score(S, single_root):
    """Score of the Tarjan tree (validated), or None when it reports NoTreeError."""
    try:
        heads = decode(S, "tarjan", single_root=single_root)
    except NoTreeError:
        return None
    assert heads.dtype == np.int64 and heads.shape == (S.shape[0],)
    check_tree(heads, single_root=single_root)
    return tree_score(S, heads)


def graph_family(rng, i, n):
    """Small-integer scores with many ties, of several shapes, some arcs forbidden."""
    N = n + 1
    kind = i % 5
    if kind == 0:
        S = rng.integers(-3, 4, size=(N, N)).astype(np.float64)
    elif kind == 1:
        S = rng.integers(0, 3, size=(N, N)).astype(np.float64)  # ties everywhere
    elif kind == 2:
        S = rng.integers(-9, 0, size=(N, N)).astype(np.float64)  # all negative
    elif kind == 3:
        S = rng.integers(-2, 3, size=(N, N)).astype(np.float64)
        S[0, 1:] += 4  # strong root arcs: many root children before the single-root phase
    else:
        S = rng.integers(-2, 3, size=(N, N)).astype(np.float64)
        S[0, 1:] -= 4  # weak root arcs
    if rng.random() < 0.5:
        S[rng.random((N, N)) < rng.uniform(0.1, 0.6)] = NEG
    return S


@pytest.mark.parametrize("single_root", [False, True])
def test_matches_brute_force_on_random_graphs(single_root):
    rng = np.random.default_rng(20210 + single_root)
    infeasible = 0
    for i in range(2000):
        n = int(rng.integers(1, 8))
        S = graph_family(rng, i, n)
        want = optimum(S, single_root)
        got = tarjan_score(S, single_root)
        if want is None:
            infeasible += 1
            assert got is None, f"graph {i}: Tarjan found a tree where none exists"
        else:
            assert got == want, f"graph {i}: Tarjan {got} != optimum {want}\n{S}"
    assert 50 < infeasible < 1500  # both branches are exercised


def test_real_valued_scores_against_bock_on_longer_sentences():
    rng = np.random.default_rng(7)
    for i in range(60):
        n = int(rng.integers(8, 45))
        N = n + 1
        L = rng.normal(size=(N, N)) * 2
        S = L - np.log(np.exp(L).sum(axis=0, keepdims=True))  # log-softmax over heads
        if i % 3 == 0:
            S[rng.random((N, N)) < 0.2] = NEG
        for single_root in (False, True):
            got = tarjan_score(S, single_root)
            try:
                want = tree_score(S, decode(S, "bock", single_root=single_root))
            except NoTreeError:
                want = None
            if want is None:
                assert got is None
            else:
                assert got == pytest.approx(want, abs=1e-9)


def test_single_root_swaps_away_the_cheapest_root_edge():
    # Unconstrained optimum: 0->1, 0->2, 0->3. The root arc to 3 is the cheapest to lose.
    S = np.full((4, 4), NEG)
    S[0, 1], S[0, 2], S[0, 3] = 10.0, 10.0, 10.0
    S[1, 2], S[2, 3], S[1, 3] = 1.0, 9.5, 2.0
    heads = decode(S, "tarjan", single_root=False)
    assert heads.tolist() == [-1, 0, 0, 0]
    heads = decode(S, "tarjan", single_root=True)
    check_tree(heads, single_root=True)
    assert tree_score(S, heads) == optimum(S, True) == 10.0 + 1.0 + 9.5


def test_single_root_swap_that_closes_a_cycle():
    # Word 2's only non-root head is in its own subtree: the swap contracts a cycle.
    S = np.full((4, 4), NEG)
    S[0, 1], S[0, 2] = 5.0, 6.0
    S[2, 3], S[3, 2], S[1, 3] = 4.0, 3.0, 1.0
    assert tarjan_score(S, True) == optimum(S, True)
    assert tarjan_score(S, False) == optimum(S, False)


def test_infeasible_raises():
    S = np.zeros((4, 4))
    S[:, 2] = NEG  # word 2 has no head
    with pytest.raises(NoTreeError):
        decode(S, "tarjan", single_root=False)
    S = np.zeros((4, 4))
    S[0, :] = NEG  # ROOT has no child
    with pytest.raises(NoTreeError):
        decode(S, "tarjan")
    # A tree exists, but only with two root children.
    S = np.full((3, 3), NEG)
    S[0, 1] = S[0, 2] = 0.0
    assert decode(S, "tarjan", single_root=False).tolist() == [-1, 0, 0]
    with pytest.raises(NoTreeError):
        decode(S, "tarjan", single_root=True)


def test_unreachable_cycle_is_infeasible():
    S = np.full((4, 4), NEG)
    S[0, 1] = 0.0
    S[2, 3] = S[3, 2] = 5.0  # 2 and 3 only reach each other
    for single_root in (False, True):
        with pytest.raises(NoTreeError):
            decode(S, "tarjan", single_root=single_root)


@pytest.mark.parametrize("single_root", [False, True])
def test_thousand_word_chain(single_root):
    n = 1000
    N = n + 1
    S = np.full((N, N), -5.0)
    for d in range(1, N):
        S[d - 1, d] = 1.0
    heads = decode(S, "tarjan", single_root=single_root)
    assert heads.tolist() == [-1, *range(n)]
    # Reversed chain with a long cycle: every word prefers its right neighbour, the last the
    # first, so the greedy graph is one 1000-cycle.
    S = np.full((N, N), -5.0)
    for d in range(1, n):
        S[d + 1, d] = 1.0
    S[1, n] = 1.0
    S[0, 1:] = -2.0
    heads = decode(S, "tarjan", single_root=single_root)
    check_tree(heads, single_root=single_root)
    assert tree_score(S, heads) == pytest.approx((n - 1) * 1.0 - 2.0)


def test_float32_input_and_input_unchanged():
    rng = np.random.default_rng(3)
    S32 = rng.normal(size=(12, 12)).astype(np.float32)
    S32[2, 5] = NEG
    before = S32.copy()
    h32 = decode(S32, "tarjan")
    h64 = decode(S32.astype(np.float64), "tarjan")
    assert h32.tolist() == h64.tolist()
    np.testing.assert_array_equal(S32, before)
    S = rng.integers(-2, 3, size=(7, 7)).astype(np.float64)
    S[1, 3] = NEG
    before = S.copy()
    for single_root in (False, True):
        decode(S, "tarjan", single_root=single_root)
    np.testing.assert_array_equal(S, before)


def test_non_contiguous_input():
    rng = np.random.default_rng(4)
    big = rng.normal(size=(20, 20))
    S = big[::2, ::2]  # a strided view
    assert tarjan_score(S, True) == pytest.approx(tree_score(S, decode(S, "bock")), abs=1e-12)
    St = rng.normal(size=(9, 9)).T  # Fortran order
    assert tarjan_score(St, False) == pytest.approx(
        tree_score(St, decode(St, "bock", single_root=False)), abs=1e-12
    )


def test_one_word_and_bad_values():
    assert decode(np.array([[0.0, 1.0], [0.0, 0.0]]), "tarjan").tolist() == [-1, 0]
    S = np.zeros((3, 3))
    S[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        decode(S, "tarjan")
    S = np.zeros((3, 3))
    S[1, 2] = np.inf
    with pytest.raises(ValueError):
        decode(S, "tarjan")


def test_compiled_solver_directly():
    # The solve() kernel on a work matrix, the form the batch pool and losses use.
    rng = np.random.default_rng(5)
    S = rng.normal(size=(9, 9))
    W = np.empty((9, 9))
    assert load_scores(S, W) == 0
    W_before = W.copy()
    heads = np.empty(9, dtype=np.int64)
    assert tarjan.solve(W, True, heads) == 0
    check_tree(heads, single_root=True)
    np.testing.assert_array_equal(W, W_before)  # read only
