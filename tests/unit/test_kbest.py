"""K-best trees (``kbest``, ``iter_kbest``): exactness against brute-force enumeration."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, check_tree, decode, tree_score
from bockparse.decoders.brute import all_trees
from bockparse.decoders.kbest import iter_kbest, kbest

kbest_module = importlib.import_module("bockparse.decoders.kbest")  # the module, not the function

NEG = -np.inf
FAMILIES = ("ties", "negative", "log_softmax", "uniform")


def random_scores(rng, family, n):
    N = n + 1
    if family == "ties":
        S = rng.integers(-2, 3, size=(N, N)).astype(np.float64)
    elif family == "negative":
        S = rng.integers(-9, 0, size=(N, N)).astype(np.float64)
    elif family == "log_softmax":
        L = rng.normal(size=(N, N)) * 2.0
        S = L - np.log(np.exp(L).sum(axis=0, keepdims=True))  # over heads, column-wise
    else:
        S = rng.uniform(0.1, 5.0, size=(N, N))
    if rng.random() < 0.3:
        S[rng.random((N, N)) < 0.25] = NEG
    return S


def assert_valid_list(S, out, single_root):
    """Valid trees, scores recomputed from S, nonincreasing, no tree twice."""
    seen = set()
    previous = np.inf
    for score, heads in out:
        assert heads.dtype == np.int64 and heads.shape == (S.shape[0],)
        check_tree(heads, single_root=single_root)
        assert score == pytest.approx(tree_score(S, heads), abs=1e-9)
        assert score <= previous + 1e-9
        previous = score
        key = tuple(heads.tolist())
        assert key not in seen, f"tree {key} listed twice"
        seen.add(key)


def assert_top_scores(out, want_sorted):
    got = np.array([score for score, _ in out])
    assert got.shape == want_sorted.shape
    np.testing.assert_allclose(got, want_sorted, rtol=0, atol=1e-9)


@pytest.mark.parametrize("single_root", [True, False])
def test_matches_brute_force(single_root):
    rng = np.random.default_rng(2021 + single_root)
    graphs = 0
    for i in range(560):
        family = FAMILIES[i % 4]
        n = int(rng.integers(1, 7))
        S = random_scores(rng, family, n)
        _, values = all_trees(S, single_root=single_root)
        if values.size == 0:
            with pytest.raises(NoTreeError):
                kbest(S, 3, single_root=single_root)
            assert kbest(S, 0, single_root=single_root) == []
            continue
        graphs += 1
        want = np.sort(values)[::-1]
        # The first tree is an optimum (compared with the Bock decoder's tree score).
        best = tree_score(S, decode(S, "bock", single_root=single_root))
        for k in (1, 3, 10):
            out = kbest(S, k, single_root=single_root)
            assert_valid_list(S, out, single_root)
            assert_top_scores(out, want[:k])
            assert out[0][0] == pytest.approx(best, abs=1e-9)
        # "all": exhaust the iterator where the tree count is moderate, else a long prefix.
        limit = values.size if values.size <= 1500 else 200
        out = list(itertools.islice(iter_kbest(S, single_root=single_root), limit))
        assert_valid_list(S, out, single_root)
        assert_top_scores(out, want[:limit])
        if limit == values.size:
            assert kbest(S, values.size + 5, single_root=single_root).__len__() == values.size
    assert graphs >= 500


def test_iter_kbest_exhausts_exactly_the_trees():
    rng = np.random.default_rng(11)
    for i in range(120):
        n = int(rng.integers(1, 6))
        S = random_scores(rng, FAMILIES[i % 4], n)
        for single_root in (True, False):
            heads, _ = all_trees(S, single_root=single_root)
            if heads.shape[0] == 0:
                with pytest.raises(NoTreeError):
                    iter_kbest(S, single_root=single_root)
                continue
            listed = [tuple(h.tolist()) for _, h in iter_kbest(S, single_root=single_root)]
            assert len(listed) == len(set(listed)) == heads.shape[0]
            assert set(listed) == {tuple(h.tolist()) for h in heads}


# Tie-heavy matrices on which the search's tie guard once took over.
TIE_CASES = [
    (
        False,
        [[-1, 0, 1, -1, 0, -1], [1, 1, 0, 2, 2, 1], [1, 1, -1, 1, 0, -1],
         [1, 2, 0, 1, -2, -1], [-1, -2, 2, -2, -2, -2], [1, 1, -1, 2, 0, 2]],
    ),
    (
        True,
        [[-1, 2, -2, 2, 0, 2, 1], [2, 0, 0, 0, 0, -1, 1], [2, 2, 1, 1, 0, 0, -1],
         [-2, -2, 1, -2, 2, -2, 0], [-2, 2, 1, 0, 0, -1, -2], [2, -2, 1, 1, 2, 1, 1],
         [1, 1, -2, -1, 0, 0, 1]],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("single_root", "rows"), TIE_CASES)
def test_tie_guard(monkeypatch, single_root, rows):
    """The tie guard (Lawler's partition around the tree already output) is exact.

    With Theorem 1's tie order a re-solved cell has returned its reference tree on every
    graph tried, but float64 rounding can still break a tie the other way; so every re-solve
    is made to report a mismatch here, and the guard alone must list every tree once.
    """
    S = np.array(rows, dtype=np.float64)
    mismatches = []
    original = kbest_module._Cells.next

    def mismatching(self, bans, forced, root_only, ref=None):
        result = original(self, bans, forced, root_only, ref)
        if ref is not None and result[0] == kbest_module.OK:
            mismatches.append(ref)
            return (kbest_module.MISMATCH, *result[1:])
        return result

    monkeypatch.setattr(kbest_module._Cells, "next", mismatching)
    heads, values = all_trees(S, single_root=single_root)
    out = list(iter_kbest(S, single_root=single_root))
    assert mismatches, "the tie guard was not exercised"
    assert_valid_list(S, out, single_root)
    assert_top_scores(out, np.sort(values)[::-1])
    assert {tuple(h.tolist()) for _, h in out} == {tuple(h.tolist()) for h in heads}


def test_negative_scores_under_the_root_constraint():
    # All-negative scores: the case where the paper's reference code misorders and repeats.
    rng = np.random.default_rng(5)
    for _ in range(40):
        S = -rng.integers(1, 6, size=(6, 6)).astype(np.float64)
        _, values = all_trees(S, single_root=True)
        out = list(iter_kbest(S, single_root=True))
        assert_valid_list(S, out, True)
        assert_top_scores(out, np.sort(values)[::-1])


def test_longer_sentences_are_consistent():
    rng = np.random.default_rng(9)
    for n in (12, 25, 40):
        N = n + 1
        L = rng.normal(size=(N, N)) * 2.0
        S = (L - np.log(np.exp(L).sum(axis=0, keepdims=True))).astype(np.float32)
        for single_root in (True, False):
            out = kbest(S, 30, single_root=single_root)
            assert len(out) == 30
            assert_valid_list(S.astype(np.float64), out, single_root)
            best = tree_score(S, decode(S, "bock", single_root=single_root))
            assert out[0][0] == pytest.approx(best, abs=1e-6)
            assert kbest(S, 5, single_root=single_root)[-1][0] == pytest.approx(out[4][0])


def test_single_root_lists_are_the_dependency_trees_of_the_unconstrained_list():
    rng = np.random.default_rng(12)
    S = rng.integers(-3, 4, size=(5, 5)).astype(np.float64)
    everything = list(iter_kbest(S, single_root=False))
    dependency = [(s, h) for s, h in everything if np.count_nonzero(h[1:] == 0) == 1]
    constrained = list(iter_kbest(S, single_root=True))
    assert len(constrained) == len(dependency)
    np.testing.assert_allclose([s for s, _ in constrained], [s for s, _ in dependency])


def test_forbidden_arcs_and_small_cases():
    S = np.full((3, 3), NEG)
    S[0, 1] = S[0, 2] = 0.0
    assert [h.tolist() for _, h in kbest(S, 5, single_root=False)] == [[-1, 0, 0]]
    with pytest.raises(NoTreeError):
        kbest(S, 1, single_root=True)
    one_word = np.array([[0.0, -1.5], [0.0, 0.0]])
    assert [(s, h.tolist()) for s, h in kbest(one_word, 4)] == [(-1.5, [-1, 0])]


def test_input_validation_and_unchanged_input():
    with pytest.raises(ValueError):
        kbest(np.zeros((3, 4)), 2)
    with pytest.raises(ValueError):
        kbest(np.zeros((1, 1)), 2)
    S = np.zeros((4, 4))
    S[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        kbest(S, 2)
    with pytest.raises(ValueError, match="NaN"):
        iter_kbest(S)
    with pytest.raises(ValueError):
        kbest(np.zeros((4, 4)), -1)
    with pytest.raises(ValueError):
        kbest(np.zeros((4, 4)), 2.5)
    rng = np.random.default_rng(1)
    S = rng.normal(size=(6, 6))
    S[2, 3] = NEG
    before = S.copy()
    out = kbest(S, 7)
    np.testing.assert_array_equal(S, before)
    out[0][1][1] = 99  # the caller owns the returned arrays
    assert kbest(S, 7)[0][1][1] != 99
