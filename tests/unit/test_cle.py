"""Chu-Liu/Edmonds ("cle"): exactness against brute force, single root, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, check_tree, cle, decode, decode_batch, tree_score
from bockparse.decoders.brute import all_trees
from bockparse.decoders.synthetic import integer_graph

NEG = -np.inf


def optimum(S, single_root):
    """Brute-force optimum score, or None when no (single-root) tree exists."""
    try:
        return tree_score(S, decode(S, "brute", single_root=single_root))
    except NoTreeError:
        return None


def cle_score(S, single_root, **kw):
    """Score of the CL/E tree (validated), or None when CL/E reports NoTreeError."""
    try:
        heads = decode(S, "cle", single_root=single_root, **kw)
    except NoTreeError:
        return None
    assert heads.dtype == np.int64 and heads.shape == (S.shape[0],)
    check_tree(heads, single_root=single_root)
    return tree_score(S, heads)


def tutorial_single_root():
    """The tutorial's three-word single-root example; every other arc scores 0."""
    S = np.zeros((4, 4))
    S[0, 1], S[0, 2], S[1, 2], S[1, 3] = 10, 9, 3, 8
    return S


def chain_matrix(n):
    """Only forward arcs ``i-1 -> i`` (1) and backward arcs ``i+1 -> i`` (2) are admissible and
    ROOT may only take word 1: the forward chain is the only tree, while the greedy heads point
    backwards, so CL/E contracts a nested sequence of about n cycles."""
    N = n + 1
    S = np.full((N, N), NEG)
    idx = np.arange(1, N)
    S[idx - 1, idx] = 1.0
    S[idx[:-1] + 1, idx[:-1]] = 2.0
    return S


@pytest.mark.parametrize("single_root", [False, True])
def test_matches_brute_force(single_root):
    rng = np.random.default_rng(20260 + single_root)
    feasible = infeasible = 0
    for it in range(3000):
        n = int(rng.integers(1, 8))
        p_forbid = (0.0, 0.15, 0.4, 0.6)[it % 4]
        S = integer_graph(n, rng, forbid=p_forbid)
        best = optimum(S, single_root)
        got = cle_score(S, single_root)
        assert got == best, (it, S.tolist())
        feasible += best is not None
        infeasible += best is None
    assert feasible > 1500 and infeasible > 100


def test_reweight_strategy_matches_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(400):
        S = integer_graph(int(rng.integers(1, 7)), rng, forbid=0.2)
        assert cle_score(S, True, root_strategy="reweight") == optimum(S, True)


@pytest.mark.parametrize("low, high", [(1, 9), (0, 3), (1000, 1003)])
def test_positive_scores(low, high):
    """Nonnegative scores: the single-root penalty comes from the range, not the sign."""
    rng = np.random.default_rng(low)
    for _ in range(300):
        S = integer_graph(int(rng.integers(2, 7)), rng, low=low, high=high, forbid=0.0)
        for single_root in (False, True):
            assert cle_score(S, single_root) == optimum(S, single_root)


def test_real_valued_scores_of_both_signs():
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 7))
        S = rng.normal(0.0, 3.0, size=(n + 1, n + 1)) + rng.choice([-50.0, 0.0, 50.0])
        for single_root in (False, True):
            assert cle_score(S, single_root) == pytest.approx(optimum(S, single_root), abs=1e-9)


def test_tutorial_single_root_example():
    S = tutorial_single_root()
    free = decode(S, "cle", single_root=False)
    assert tree_score(S, free) == 27
    assert free.tolist() == [-1, 0, 0, 1]
    one = decode(S, "cle", single_root=True)
    assert tree_score(S, one) == 21
    assert one.tolist() == [-1, 0, 1, 1]
    _, scores = all_trees(S, single_root=True)
    assert scores.max() == 21


def test_all_ties():
    for n in (1, 2, 5, 30):
        S = np.zeros((n + 1, n + 1))
        for single_root in (False, True):
            heads = decode(S, "cle", single_root=single_root)
            check_tree(heads, single_root=single_root)


def test_single_word():
    assert decode(np.array([[0.0, -2.5], [0.0, 0.0]]), "cle").tolist() == [-1, 0]
    with pytest.raises(NoTreeError):
        decode(np.array([[0.0, NEG], [0.0, 0.0]]), "cle")


def test_infeasible_cases():
    # Word 2 has no admissible head.
    S = np.zeros((4, 4))
    S[:, 2] = NEG
    for single_root in (False, True):
        with pytest.raises(NoTreeError):
            decode(S, "cle", single_root=single_root)
    # Words 2 and 3 only point at each other: unreachable from ROOT.
    S = np.full((4, 4), NEG)
    S[0, 1] = S[2, 3] = S[3, 2] = 1.0
    for single_root in (False, True):
        with pytest.raises(NoTreeError):
            decode(S, "cle", single_root=single_root)
    # Two words that can only attach to ROOT: a tree, but no single-root tree.
    S = np.full((3, 3), NEG)
    S[0, 1] = S[0, 2] = 5.0
    assert decode(S, "cle", single_root=False).tolist() == [-1, 0, 0]
    with pytest.raises(NoTreeError):
        decode(S, "cle", single_root=True)
    # ROOT has no admissible child at all.
    S = np.zeros((4, 4))
    S[0, :] = NEG
    with pytest.raises(NoTreeError):
        decode(S, "cle", single_root=False)


@pytest.mark.parametrize("single_root", [False, True])
def test_thousand_word_chain(single_root):
    n = 1000
    S = chain_matrix(n)
    heads = decode(S, "cle", single_root=single_root)
    assert heads.tolist() == [-1, *range(n)]
    # The same chain with every other arc admissible at a lower score.
    S2 = np.where(np.isinf(S), -5.0, S)
    S2[0, 1] = 1.0
    heads = decode(S2, "cle", single_root=single_root)
    check_tree(heads, single_root=single_root)
    assert tree_score(S2, heads) >= tree_score(S2, np.array([-1, *range(n)]))


def test_float32_input_and_input_unchanged():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 7))
        S = rng.normal(size=(n + 1, n + 1)).astype(np.float32)
        S[rng.random(S.shape) < 0.1] = NEG
        before = S.copy()
        for single_root in (False, True):
            best = optimum(S, single_root)
            got = cle_score(S, single_root)
            assert S.dtype == np.float32 and np.array_equal(S, before)
            if best is None:
                assert got is None
            else:
                assert got == pytest.approx(best, abs=1e-9)


def test_input_unchanged_float64_and_strided():
    rng = np.random.default_rng(5)
    S = integer_graph(12, rng, forbid=0.2)
    S[0, 1:] = rng.integers(-3, 4, size=12)  # keep it feasible
    for d in range(1, 13):
        S[d - 1, d] = 3.0
    before = S.copy()
    h1 = decode(S, "cle")
    assert np.array_equal(S, before)
    # A non-contiguous view decodes like its contiguous copy.
    big = np.zeros((26, 26))
    big[::2, ::2] = S
    view = big[::2, ::2]
    assert np.array_equal(decode(view, "cle"), h1)
    assert np.array_equal(big[::2, ::2], before)
    assert np.array_equal(decode(np.asfortranarray(S), "cle"), h1)


def test_batch_matches_single():
    rng = np.random.default_rng(9)
    mats = [integer_graph(int(rng.integers(1, 12)), rng, forbid=0.0) for _ in range(20)]
    batch = decode_batch(mats, decoder="cle", workers=2)
    for S, heads in zip(mats, batch, strict=True):
        assert np.array_equal(heads, decode(S, "cle"))


def test_kernel_is_registered():
    from bockparse.decoders import get_decoder

    assert get_decoder("cle").kernel is cle.kernel


def test_bad_values():
    S = np.zeros((3, 3))
    S[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        decode(S, "cle")
    S = np.zeros((3, 3))
    S[0, 2] = np.inf
    with pytest.raises(ValueError, match=r"\+inf"):
        decode(S, "cle")


def parser_like(rng, n):
    """A random gold tree, logits N(0, 1) + 4 on gold arcs, column-wise log-softmax over heads."""
    N = n + 1
    order = rng.permutation(np.arange(1, N))
    gold = np.full(N, -1)
    gold[order[0]] = 0
    for k in range(1, n):
        gold[order[k]] = order[rng.integers(0, k)]
    L = rng.normal(size=(N, N))
    L[gold[1:], np.arange(1, N)] += 4.0
    L[np.arange(N), np.arange(N)] = NEG
    L[:, 0] = NEG
    top = L[:, 1:].max(axis=0)
    L[:, 1:] -= top + np.log(np.exp(L[:, 1:] - top).sum(axis=0))
    return L


def test_agrees_with_bock_on_longer_sentences():
    """Beyond brute force: the same optimum as the reformulated Bock decoder."""
    rng = np.random.default_rng(13)
    for it in range(120):
        n = int(rng.integers(8, 61))
        if it % 2:
            S = parser_like(rng, n)
        else:
            S = integer_graph(n, rng, forbid=0.3)
            S[0, 1:] = np.where(rng.random(n) < 0.5, NEG, S[0, 1:])
            S[np.arange(n), np.arange(1, n + 1)] = 0.0  # keep a chain so a tree exists
        for single_root in (False, True):
            ref = tree_score(S, decode(S, "bock", single_root=single_root))
            assert cle_score(S, single_root) == pytest.approx(ref, abs=1e-9)
