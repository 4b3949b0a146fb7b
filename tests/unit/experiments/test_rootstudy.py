"""Root-constraint study: violations of 1-best and K-best trees against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bockparse.experiments.rootstudy import root_children, study_matrices


def _all_trees(N):
    """Every spanning arborescence rooted at 0 of N nodes, as heads arrays."""
    for tail in itertools.product(range(N), repeat=N - 1):
        heads = np.array([-1, *tail])
        if any(heads[d] == d for d in range(1, N)):
            continue
        ok = True
        for d in range(1, N):
            seen, h = set(), d
            while h != 0 and ok:
                if h in seen:
                    ok = False
                seen.add(h)
                h = heads[h]
        if ok:
            yield heads


def _oracle(S, k, single_root):
    N = S.shape[0]
    trees = [h for h in _all_trees(N) if not single_root or root_children(h) == 1]
    trees.sort(key=lambda h: -S[h[1:], np.arange(1, N)].sum())
    return trees[:k]


def test_root_children():
    assert root_children(np.array([-1, 0, 1, 0])) == 2
    assert root_children(np.array([-1, 0, 1, 1])) == 1


def test_violations_match_brute_force():
    rng = np.random.default_rng(7)
    mats = []
    for n in (1, 2, 3, 4, 4):
        S = rng.normal(size=(n + 1, n + 1))
        S[0, 1:] += 1.5  # root arcs attractive: unconstrained trees often have several
        mats.append(S)
    rows = study_matrices(mats, ks=(5, 10), decoder="cle")
    assert [r["decoding"] for r in rows] == ["1-best", "5-best", "10-best"]
    for row in rows:
        k = row["k"]
        free = [_oracle(S, k, False) for S in mats]
        trees = sum(len(t) for t in free)
        bad = sum(root_children(h) > 1 for t in free for h in t)
        assert (row["trees"], row["violating"]) == (trees, bad)
        assert row["unconstrained_pct"] == pytest.approx(100 * bad / trees)
        assert row["constrained_trees"] == sum(len(_oracle(S, k, True)) for S in mats)
        assert row["constrained_violating"] == 0 and row["constrained_pct"] == 0.0
    assert rows[0]["violating"] > 0  # the case the study is about


def test_bad_k():
    with pytest.raises(ValueError, match="K must be"):
        study_matrices([np.zeros((3, 3))], ks=(0,))
