"""``stanza-cle``: Stanza's own CL/E through the registry, against brute force by score."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from bockparse.decoders import NoTreeError, check_tree, decode, get_decoder, tree_score
from bockparse.decoders.brute import all_trees

NEG = -np.inf


def log_softmax_graph(rng: np.random.Generator, n: int, forbid: float) -> np.ndarray:
    """Integer logits with ties, forbidden arcs, normalised over heads as Stanza's parser does."""
    N = n + 1
    L = rng.integers(-2, 3, size=(N, N)).astype(np.float64)
    L[rng.random((N, N)) < forbid] = NEG
    np.fill_diagonal(L, NEG)
    L[:, 0] = NEG
    cols = L[:, 1:]
    with np.errstate(invalid="ignore"):
        cols -= np.logaddexp.reduce(cols, axis=0, keepdims=True)
    cols[np.isnan(cols)] = NEG  # a word without admissible head stays without one
    return L


@pytest.mark.parametrize(
    ("single_root", "root_strategy"), [(False, None), (True, None), (True, "reweight")]
)
def test_matches_brute_force_by_score(single_root, root_strategy):
    rng = np.random.default_rng(1015)
    infeasible = 0
    for i in range(400):
        S = log_softmax_graph(rng, int(rng.integers(1, 7)), [0.0, 0.3][i % 2])
        trees, values = all_trees(S, single_root=False)
        if single_root:
            values = values[(trees[:, 1:] == 0).sum(axis=1) == 1]
        if not len(values):
            infeasible += 1
            with pytest.raises(NoTreeError):
                decode(S, "stanza-cle", single_root=single_root, root_strategy=root_strategy)
            continue
        before = S.copy()
        heads = decode(S, "stanza-cle", single_root=single_root, root_strategy=root_strategy)
        np.testing.assert_array_equal(S, before)  # Stanza overwrites only its own copy
        check_tree(heads, single_root=single_root)
        assert tree_score(S, heads) == pytest.approx(values.max(), rel=0, abs=1e-9), S
    assert infeasible > 0


def test_positive_scores_are_refused_under_the_root_constraint():
    S = np.array([[0.0, 2.0, 1.0], [0.0, 0.0, 3.0], [0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match="log-softmax"):
        decode(S, "stanza-cle")
    assert decode(S, "stanza-cle", single_root=False).tolist() == [-1, 0, 1]


def test_without_stanza_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "stanza.models.common", None)
    assert get_decoder("stanza-cle").batch is None  # a Python decoder: batches loop in Python
    with pytest.raises(ImportError, match=r"bockparse\[bench\]"):
        decode(np.log(np.full((3, 3), 0.5)), "stanza-cle")
