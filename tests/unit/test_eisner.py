"""Eisner ("eisner"): the best projective tree, against brute force over projective trees."""

from __future__ import annotations

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, check_tree, decode, decode_batch, eisner, tree_score
from bockparse.decoders.brute import all_trees
from bockparse.decoders.eisner import is_projective
from bockparse.decoders.synthetic import integer_graph

NEG = -np.inf


def projective_mask(heads):
    """Independent oracle for ``is_projective`` on a stack ``[T, N]`` of trees (vectorised):
    a tree is projective when no arcs ``(a, b)``, ``(c, e)`` (endpoints sorted) have a < c < b < e.
    """
    h = heads[:, 1:]
    d = np.arange(1, heads.shape[1])[None, :]
    lo = np.minimum(h, d)
    hi = np.maximum(h, d)
    a, b = lo[:, :, None], hi[:, :, None]
    c, e = lo[:, None, :], hi[:, None, :]
    crossing = (a < c) & (c < b) & (b < e)
    return ~crossing.any(axis=(1, 2))


def dominated_between(heads):
    """Textbook definition: for every arc h -> d, each word strictly between is dominated by h."""
    N = len(heads)
    for d in range(1, N):
        h = heads[d]
        for w in range(min(h, d) + 1, max(h, d)):
            v = w
            while v != h and v != 0:
                v = heads[v]
            if v != h:
                return False
    return True


def eisner_score(S, single_root):
    try:
        heads = decode(S, "eisner", single_root=single_root)
    except NoTreeError:
        return None, None
    check_tree(heads, single_root=single_root)
    assert is_projective(heads)
    return tree_score(S, heads), heads


def chain_matrix(n):
    N = n + 1
    S = np.full((N, N), NEG)
    idx = np.arange(1, N)
    S[idx - 1, idx] = 1.0
    S[idx[:-1] + 1, idx[:-1]] = 2.0
    return S


def test_is_projective_examples():
    assert is_projective([-1, 0])
    assert is_projective([-1, 2, 0, 2, 2])  # the tutorial's 'she read books today' tree
    assert not is_projective([-1, 0, 0, 1])  # ROOT -> 2 crosses 1 -> 3
    assert not is_projective([-1, 3, 0, 2, 1])  # ROOT -> 2 crosses 3 -> 1
    assert is_projective(np.array([-1, 0, 1, 2, 3]))
    assert is_projective([-1, 2, 3, 0])
    with pytest.raises(ValueError):
        is_projective(np.zeros((2, 2), dtype=np.int64))


def test_is_projective_against_oracles():
    rng = np.random.default_rng(1)
    for n in range(1, 7):
        S = rng.normal(size=(n + 1, n + 1))
        heads, _ = all_trees(S, single_root=False)
        mask = projective_mask(heads)
        got = np.array([is_projective(t) for t in heads])
        assert np.array_equal(got, mask)
        sample = heads[rng.choice(len(heads), size=min(len(heads), 200), replace=False)]
        for t in sample:
            assert dominated_between(t) == is_projective(t)


def test_matches_projective_brute_force():
    rng = np.random.default_rng(2026)
    counts = {True: [0, 0], False: [0, 0]}
    for it in range(1200):
        n = int(rng.integers(1, 8))
        if n == 7 and it % 3:  # keep the n = 7 enumerations to a few hundred
            n = int(rng.integers(1, 7))
        p_forbid = (0.0, 0.15, 0.35, 0.5)[it % 4]
        S = integer_graph(n, rng, forbid=p_forbid)
        trees, scores = all_trees(S, single_root=False)
        proj = projective_mask(trees) if len(trees) else np.zeros(0, bool)
        one_root = (trees[:, 1:] == 0).sum(axis=1) == 1
        for single_root in (False, True):
            keep = proj & one_root if single_root else proj
            expected = scores[keep].max() if keep.any() else None
            got, _ = eisner_score(S, single_root)
            assert got == expected, (it, single_root, S.tolist())
            counts[single_root][expected is None] += 1
            # Whenever the (non-projective) optimum is attained by a projective tree, Eisner
            # attains it too; in particular when brute force's optimum is projective.
            allowed = one_root if single_root else np.ones(len(trees), bool)
            if allowed.any():
                top = scores[allowed].max()
                if (keep & (scores == top)).any():
                    assert got == top
                hb = decode(S, "brute", single_root=single_root)
                if is_projective(hb):
                    assert got == tree_score(S, hb)
    for single_root in (False, True):
        assert counts[single_root][0] > 700 and counts[single_root][1] > 50


def test_non_projective_only():
    # Only ROOT -> 1, ROOT -> 2, 1 -> 3 are admissible: the one tree has crossing arcs.
    S = np.full((4, 4), NEG)
    S[0, 1], S[0, 2], S[1, 3] = 10, 9, 8
    for single_root in (False, True):
        with pytest.raises(NoTreeError):
            decode(S, "eisner", single_root=single_root)
    # The tutorial's single-root example: the unconstrained optimum (27) is non-projective.
    S = np.zeros((4, 4))
    S[0, 1], S[0, 2], S[1, 2], S[1, 3] = 10, 9, 3, 8
    free = decode(S, "eisner", single_root=False)
    assert free.tolist() == [-1, 0, 1, 1] and tree_score(S, free) == 21
    one = decode(S, "eisner", single_root=True)
    assert one.tolist() == [-1, 0, 1, 1] and tree_score(S, one) == 21


def test_root_constraints():
    # Two words that can only attach to ROOT.
    S = np.full((3, 3), NEG)
    S[0, 1] = S[0, 2] = 1.0
    assert decode(S, "eisner", single_root=False).tolist() == [-1, 0, 0]
    with pytest.raises(NoTreeError):
        decode(S, "eisner", single_root=True)
    S = np.zeros((4, 4))
    S[0, :] = NEG
    for single_root in (False, True):
        with pytest.raises(NoTreeError):
            decode(S, "eisner", single_root=single_root)
    # Word 2 has no admissible head.
    S = np.zeros((4, 4))
    S[:, 2] = NEG
    with pytest.raises(NoTreeError):
        decode(S, "eisner", single_root=False)


def test_single_word_and_ties():
    assert decode(np.array([[0.0, 1.5], [0.0, 0.0]]), "eisner").tolist() == [-1, 0]
    with pytest.raises(NoTreeError):
        decode(np.array([[0.0, NEG], [0.0, 0.0]]), "eisner")
    for n in (2, 5, 40):
        S = np.zeros((n + 1, n + 1))
        for single_root in (False, True):
            heads = decode(S, "eisner", single_root=single_root)
            check_tree(heads, single_root=single_root)
            assert is_projective(heads)


@pytest.mark.parametrize("single_root", [False, True])
def test_thousand_word_chain(single_root):
    n = 1000
    S = chain_matrix(n)
    assert decode(S, "eisner", single_root=single_root).tolist() == [-1, *range(n)]
    # A left-branching chain: ROOT -> n, i + 1 -> i, everything else slightly worse.
    L = np.full((n + 1, n + 1), -1.0)
    L[0, n] = 0.0
    idx = np.arange(1, n)
    L[idx + 1, idx] = 0.0
    heads = decode(L, "eisner", single_root=single_root)
    assert heads.tolist() == [-1, *range(2, n + 1), 0]


def test_float32_input_and_input_unchanged():
    rng = np.random.default_rng(4)
    for _ in range(150):
        n = int(rng.integers(1, 7))
        S = rng.normal(size=(n + 1, n + 1)).astype(np.float32)
        S[rng.random(S.shape) < 0.1] = NEG
        before = S.copy()
        trees, scores = all_trees(S, single_root=False)
        proj = projective_mask(trees) if len(trees) else np.zeros(0, bool)
        one_root = (trees[:, 1:] == 0).sum(axis=1) == 1
        for single_root in (False, True):
            keep = proj & one_root if single_root else proj
            got, _ = eisner_score(S, single_root)
            assert S.dtype == np.float32 and np.array_equal(S, before)
            if keep.any():
                assert got == pytest.approx(scores[keep].max(), abs=1e-9)
            else:
                assert got is None
    S = rng.normal(size=(13, 13))
    big = np.zeros((26, 26))
    big[::2, ::2] = S
    before = big.copy()
    assert np.array_equal(decode(big[::2, ::2], "eisner"), decode(S, "eisner"))
    assert np.array_equal(big, before)


def test_batch_matches_single():
    rng = np.random.default_rng(9)
    mats = [integer_graph(int(rng.integers(1, 12)), rng, forbid=0.0) for _ in range(20)]
    for single_root in (False, True):
        batch = decode_batch(mats, decoder="eisner", single_root=single_root, workers=2)
        for S, heads in zip(mats, batch, strict=True):
            assert np.array_equal(heads, decode(S, "eisner", single_root=single_root))


def test_kernel_is_registered():
    from bockparse.decoders import get_decoder

    assert get_decoder("eisner").kernel is eisner.kernel


def test_longer_sentences_against_cle():
    """Beyond brute force: Eisner never beats the unrestricted optimum and matches it whenever
    the CL/E optimum is projective; it is at least as good as the projective gold-like chains."""
    from bockparse.decoders import cle  # noqa: F401  (registration)

    rng = np.random.default_rng(17)
    matched = 0
    for it in range(150):
        n = int(rng.integers(8, 41))
        S = rng.integers(-4, 5, size=(n + 1, n + 1)).astype(np.float64)
        if it % 2:  # a projective tree scoring high, so the optimum is often projective
            S[np.arange(n), np.arange(1, n + 1)] += 9.0
        for single_root in (False, True):
            got, _ = eisner_score(S, single_root)
            free = decode(S, "cle", single_root=single_root)
            best = tree_score(S, free)
            assert got <= best
            if is_projective(free):
                assert got == best
                matched += 1
            chain = np.arange(-1, n)
            assert got >= tree_score(S, chain)
    assert matched > 50
