"""Single-root Bock's pruned enumeration of root children (§4.2) equals the unpruned one.

The dual bound skips root children that cannot win or tie; its margin must cover float64
rounding, so that the result is the unpruned enumeration's array, its smallest-child tie rule
included, also when large column offsets cancel (their rounding dwarfs a fixed tolerance).
"""

from __future__ import annotations

import numpy as np

from bockparse.decoders import NoTreeError, decode
from bockparse.decoders.synthetic import integer_graph, parser_like


def sequential_score(W: np.ndarray, heads: np.ndarray) -> float:
    """The tree score summed as the kernels sum it (left to right, float64)."""
    total = 0.0
    for d in range(1, len(heads)):
        total += W[heads[d], d]
    return total


def unpruned(S: np.ndarray) -> np.ndarray | None:
    """The enumeration of §4.2 without the bound: the rooted optimum if it has one root child,
    else the best sole-root-child solve, the smallest child among equal scores."""
    W = np.asarray(S, dtype=np.float64)
    try:
        rooted = decode(W, "bock", single_root=False)
    except NoTreeError:
        return None
    if (rooted[1:] == 0).sum() == 1:
        return rooted
    best, best_heads = -np.inf, None
    for c in range(1, W.shape[0]):
        if W[0, c] == -np.inf:
            continue
        T = W.copy()
        T[0, :] = -np.inf
        T[0, c] = W[0, c]
        try:
            heads = decode(T, "bock", single_root=False)
        except NoTreeError:
            continue
        score = sequential_score(T, heads)
        if best_heads is None or score > best:
            best, best_heads = score, heads
    return best_heads


def assert_pruned_equals_unpruned(S: np.ndarray) -> None:
    try:
        got = decode(S, "bock")
    except NoTreeError:
        got = None
    expected = unpruned(S)
    assert (got is None and expected is None) or np.array_equal(got, expected), S


def with_cancelling_offsets(S: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``S`` plus per-column offsets of magnitude 1e9..1e14 that sum to zero."""
    n = S.shape[0] - 1
    offsets = rng.choice([-1.0, 1.0], size=n) * 10 ** rng.uniform(9, 14, size=n)
    out = S.copy()
    out[:, 1:] += offsets - offsets.mean()
    return out


def test_on_integer_graphs():
    rng = np.random.default_rng(4242)
    for i in range(2000):
        S = integer_graph(int(rng.integers(1, 9)), rng, low=-2, high=2, forbid=0.2)
        S[0, 1:] += i % 4  # strong root arcs: several root children, so the bound is used
        assert_pruned_equals_unpruned(S)


def test_on_matrices_with_large_cancelling_column_offsets():
    rng = np.random.default_rng(1414)
    for i in range(1500):
        n = int(rng.integers(2, 12))
        if i % 2:
            base = parser_like(n, rng, gold_bonus=float(rng.choice([0.0, 1.0, 4.0])))
        else:
            base = integer_graph(n, rng, low=0, high=2, forbid=0.2)
            base[0, 1:] += i % 3
        assert_pruned_equals_unpruned(with_cancelling_offsets(base, rng))
